// src/cli/progress_line.h
#include "src/cli/progress_line.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "scalebench/fault.h"

namespace sb {
namespace {

using Clock = std::chrono::steady_clock;

std::string clock_text(double seconds) {
  char text[32];
  const long total = static_cast<long>(seconds + 0.5);
  std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

bool is_step_phase(const std::string& phase) { return phase == "solo" || phase == "comm" || phase == "dp"; }

}  // namespace

std::string ProgressLine::text(const std::string& phase, long long step, long long steps, double elapsed_s) {
  std::string line = "[run] " + phase + " phase: step " + std::to_string(step) + " of " + std::to_string(steps) +
                     ", " + clock_text(elapsed_s) + " elapsed";
  // Time left from the mean step so far (steps done: step - 1; the first one includes set-up, so it waits).
  if (step > 2 && step <= steps) {
    line += ", about " + clock_text(elapsed_s / (step - 1) * (steps - step + 1)) + " left";
  }
  return line;
}

ProgressLine::ProgressLine(bool enabled, long long steps_per_phase) {
  if (!enabled || isatty(fileno(stderr)) == 0) return;
  installed_ = true;
  struct State {
    std::string phase;
    Clock::time_point phase_start, last_drawn;
    bool drawn = false;
  };
  auto state = std::make_shared<State>();
  set_progress_listener([state, steps_per_phase](const std::string& phase, long long step) {
    const Clock::time_point now = Clock::now();
    if (!is_step_phase(phase) || step <= 0) {  // set-up or a phase done: its table prints next, on a clean line
      if (state->drawn) std::fputs("\r\033[K", stderr);
      state->drawn = false;
      state->phase.clear();
      return;
    }
    if (phase != state->phase) {
      state->phase = phase;
      state->phase_start = now;
    } else if (now - state->last_drawn < std::chrono::milliseconds(250)) {
      return;
    }
    const double elapsed = std::chrono::duration<double>(now - state->phase_start).count();
    std::fprintf(stderr, "\r\033[K%s", text(phase, step, steps_per_phase, elapsed).c_str());
    std::fflush(stderr);
    state->last_drawn = now;
    state->drawn = true;
  });
}

ProgressLine::~ProgressLine() {
  if (!installed_) return;
  set_progress_listener({});
  std::fputs("\r\033[K", stderr);
}

}  // namespace sb
