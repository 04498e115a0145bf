// Steps replayed from one captured graph (src/train/step_graph.h).
#include "src/train/step_graph.h"

#include "scalebench/error.h"

namespace sb {

const char* cuda_graph_mode_name(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::kOn: return "on";
    case CudaGraphMode::kOff: return "off";
    case CudaGraphMode::kAuto: break;
  }
  return "auto";
}

StepGraph::StepGraph(ProcessGroup& group, Executor& executor, CudaGraphMode mode, const std::string& phase,
                     std::optional<std::string> phase_reason)
    : group_(group), executor_(executor), mode_(mode), phase_(phase) {
  if (mode == CudaGraphMode::kOff) {
    off_reason_ = "--cuda-graph off";
    return;
  }
  if (!phase_reason) phase_reason = executor.why_no_step_graph();
  if (phase_reason) fall_back(*phase_reason);
}

void StepGraph::fall_back(const std::string& reason) {
  if (mode_ == CudaGraphMode::kOn) {
    throw RuntimeFailure("--cuda-graph on: the " + phase_ + " phase cannot run as a graph: " + reason);
  }
  off_reason_ = reason;
}

void StepGraph::issue(int index, const std::function<void()>& enqueue_step) {
  if (off_reason_ || index == 0) {
    enqueue_step();
    return;
  }
  if (!captured_) {
    capture(index, enqueue_step);
    return;
  }
  // Replay k stands for eager step (captured + k) only when the steps come in order with the same stream.
  const auto k = static_cast<uint64_t>(index - captured_index_);
  if (executor_.seed() != captured_seed_ || executor_.step() != captured_random_step_ + k) {
    throw RuntimeFailure("step graph: step " + std::to_string(index) + " of the " + phase_ +
                         " phase is not the captured step's successor " + std::to_string(k));
  }
  executor_.replay_step();
}

void StepGraph::capture(int index, const std::function<void()>& enqueue_step) {
  std::optional<std::string> failed;
  // A step that throws halfway may leave a sub-step's random stream set: the eager retry starts from this one.
  const uint64_t seed = executor_.seed(), random_step = executor_.step();
  executor_.begin_step_capture();
  try {
    enqueue_step();
    failed = executor_.end_step_capture();
  } catch (const std::exception& e) {  // a call that cannot be captured; nothing of the step has run
    executor_.abort_step_capture();
    failed = std::string("capturing the step failed: ") + e.what();
  }
  // Every rank replays or none does: a rank whose peers run eagerly would wait in its graph's all-reduces.
  const std::vector<std::string> reasons = group_.allgather_strings(failed.value_or(""));
  for (size_t rank = 0; rank < reasons.size() && !failed; ++rank) {
    if (!reasons[rank].empty()) failed = "rank " + std::to_string(rank) + ": " + reasons[rank];
  }
  if (failed) {
    fall_back(*failed);
    executor_.set_random_stream(seed, random_step);
    enqueue_step();
    return;
  }
  captured_ = true;
  captured_index_ = index;
  captured_seed_ = executor_.seed();
  captured_random_step_ = executor_.step();
  executor_.replay_step();  // the captured step itself: capturing ran nothing
}

std::string StepGraph::status() const {
  if (off_reason_) return "off (" + *off_reason_ + ")";
  if (!captured_) return "off (the phase ended before its second step, the one to capture)";
  return "on";
}

}  // namespace sb
