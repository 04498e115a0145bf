#include "src/train/dp_phase.h"

#include <vector>

#include "src/train/phase_steps.h"
#include "src/train/sub_steps.h"

namespace sb {

void enqueue_dp_step(Replica& replica, GradientReducer& reducer, const OptimizerSettings& optimizer, int64_t step) {
  for_each_sub_step(
      replica, [&](size_t k) { reducer.run_nodes_and_reduce(k); },
      [&](size_t k, int64_t optimizer_step) { reducer.update(optimizer, optimizer_step, k); }, step,
      [&](size_t k) {
        reducer.gather_for_parts(k);
        run_sub_step_parts(*replica.executor, k);
      });
}

RankPhase run_dp_phase(ProcessGroup& group, Replica& replica, GradientReducer& reducer, const TrainOptions& options,
                       StepGraph& graph, const std::string& phase, ProcessGroup* boundary) {
  auto dp_step = [&](int64_t step) { enqueue_dp_step(replica, reducer, options.optimizer, step); };
  auto wait_for_buckets = [&](RankPhase& phase, bool timed) {
    std::vector<double> durations = reducer.wait_and_time("the gradient all-reduces");
    if (!timed) return;
    const GradientReducer::Timeline timeline = reducer.timeline();
    phase.bucket_ms.push_back(std::move(durations));
    phase.nodes_done_ms.push_back(timeline.nodes_done_ms);
    phase.bucket_ready_ms.push_back(timeline.ready_ms);
    phase.bucket_start_ms.push_back(timeline.start_ms);
    phase.bucket_end_ms.push_back(timeline.end_ms);
    phase.step_start_ms.push_back(timeline.step_start_ms);
    phase.forward_done_ms.push_back(timeline.forward_done_ms);
    phase.step_done_ms.push_back(timeline.step_done_ms);
    if (reducer.sharded()) {
      phase.all_gather_ms.push_back(reducer.all_gather_ms());
      phase.update_done_ms.push_back(timeline.update_done_ms);
      phase.gather_start_ms.push_back(timeline.gather_start_ms);
      phase.gather_end_ms.push_back(timeline.gather_end_ms);
      if (reducer.gathers_before_use()) phase.gather_needed_ms.push_back(timeline.gather_needed_ms);
    }
  };
  reducer.begin_phase();
  return run_steps(group, replica, options, phase, graph, dp_step, wait_for_buckets, boundary);
}

}  // namespace sb
