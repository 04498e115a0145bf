#include "src/train/comm_phase.h"

#include <utility>
#include <vector>

#include "src/train/phase_steps.h"

namespace sb {

RankPhase run_comm_phase(ProcessGroup& boundary, GradientReducer& reducer, const TrainOptions& options,
                         const std::string& phase) {
  return step_loop(boundary, options, phase, false, [&](int, bool timed, RankPhase& mine) {
    reducer.reduce_alone();
    std::vector<double> buckets = reducer.wait_and_time("the " + phase + " phase's all-reduces");
    if (timed) {
      mine.step_ms.push_back(reducer.span_ms());
      mine.bucket_ms.push_back(std::move(buckets));
      if (reducer.sharded()) mine.all_gather_ms.push_back(reducer.all_gather_ms());
    }
    return StepOutcome{};
  });
}

}  // namespace sb
