// A phase's training steps as one captured device graph each (issue 25, --cuda-graph): the host issues a step
// with one launch instead of enqueueing thousands of nodes, so a slow or shared CPU no longer shows up as the
// GPU's time. The phase's first step runs eagerly (it loads the kernels, learns the counted rows, grows the
// lazily sized buffers); the second is captured (Executor::begin_step_capture) and replayed; every later step is a
// replay. What changes per step is resolved on the device (src/cuda/step_value.h), so replay k computes what
// eager step (captured + k) would, bit for bit.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "scalebench/executor.h"
#include "scalebench/process_group.h"
#include "scalebench/result.h"

namespace sb {

class StepGraph {
 public:
  // `phase_reason`: why this phase cannot capture whatever the executor can (the MPI backend's all-reduces run on
  // the host), or nullopt. With `mode` on, a phase that cannot capture is a RuntimeFailure here, on every rank.
  StepGraph(ProcessGroup& group, Executor& executor, CudaGraphMode mode, const std::string& phase,
            std::optional<std::string> phase_reason);

  // Issues the phase's step `index` (from 0, consecutive): `enqueue_step` eagerly, or captured and replayed.
  // Collective at the capture (every rank agrees whether it succeeded: if any failed, every rank runs the step
  // eagerly, or, with mode on, fails).
  void issue(int index, const std::function<void()>& enqueue_step);

  // "on" once a captured step has been replayed; "off (why)", also when the phase ended before the step to
  // capture.
  std::string status() const;
  bool replaying() const { return captured_; }

 private:
  ProcessGroup& group_;
  Executor& executor_;
  CudaGraphMode mode_;
  std::string phase_;
  std::optional<std::string> off_reason_;
  bool captured_ = false;
  uint64_t captured_seed_ = 0, captured_random_step_ = 0;
  int captured_index_ = 0;

  void capture(int index, const std::function<void()>& enqueue_step);
  void fall_back(const std::string& reason);
};

}  // namespace sb
