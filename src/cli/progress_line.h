// `run`'s progress on rank 0's stderr when it is a terminal: one line per phase, rewritten in place as steps
// finish ("[run] dp phase: step 14 of 23, 0:09 elapsed, about 0:06 left"), cleared when the phase's table prints.
// Redrawn at most a few times a second, and only between steps: nothing is printed inside a timed step.
#pragma once

#include <string>

namespace sb {

class ProgressLine {
 public:
  // `steps_per_phase`: warm-up plus timed steps. Installs the listener only when `enabled` and stderr is a
  // terminal; the destructor removes it.
  ProgressLine(bool enabled, long long steps_per_phase);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The line for `step` (from 1) of `phase` after `elapsed_s` seconds of the phase: what the terminal shows.
  static std::string text(const std::string& phase, long long step, long long steps, double elapsed_s);

 private:
  bool installed_ = false;
};

}  // namespace sb
