// Why E(N) < 1 (ARCHITECTURE.md, "Scaling efficiency explains itself"): 1 − E = dilation + tail + skew, each
// measured per rank and step from the solo and dp phases' marks, with the residual that the three do not explain.
// Pure arithmetic on measured timelines: no clocks here, so the unit tests hold every term apart on synthetic ones.
//
// On rank r, step s of the dp phase (times from the step's first node) against rank r's solo medians:
//   wait interval of bucket b  [start_b, start_b + w_b], w_b = d_b − min over ranks of d_b: the bucket's all-reduce
//                              took d_b here, the same collective on the rank that arrived last took the least
//                              (it waited for nobody), so the excess is this rank waiting for the slowest one;
//   skew      = the wait intervals' time where the step could not go on without them: where the communication
//               runs on the compute timeline (the CPU device: the host does the all-reduce between nodes) the whole
//               step, else (a GPU's own communication stream, which the backward pass runs beside) only after the
//               last backward node;
//   dilation  = (nodes_done − forward_done) − solo backward − skew inside the backward pass;
//   tail      = (step_done − nodes_done) − solo (step end − last node) − skew after the last backward node:
//               the exposed all-reduces and the updates that wait on them, beyond the solo step's update.
// The dp step that E uses is, per step, its slowest rank's (max over ranks), its median over steps; the terms are
// that rank's in the median step (interpolated between the two middle steps as the median is), divided by the dp
// step's median, so that they add up as the step does to 1 − E = (dp − solo) / dp. What is left (the forward pass's
// and the step edges' differences between the phases, the rank's solo step against the median solo GPU's) is the
// residual, reported as measured. Per rank: the terms of that rank's own median step.
#pragma once

#include <string>
#include <vector>

#include "scalebench/result.h"

namespace sb {

// One step of one rank, from the step's first node (solo: no buckets).
struct StepMarks {
  double step_ms = 0;  // the timed step (phase_steps.h, run_steps)
  double forward_done_ms = 0, nodes_done_ms = 0, step_done_ms = 0;
  std::vector<double> bucket_start_ms, bucket_end_ms;  // dp: each all-reduce's start and end
};
struct RankTimelines {
  std::vector<StepMarks> solo, dp;
};

// A wait inside one all-reduce, on one rank's timeline of one step.
struct WaitInterval {
  double start_ms = 0, ms = 0;
};
// [rank][step][bucket]: w = this rank's all-reduce duration − the shortest over ranks of the same (step, bucket),
// placed at the all-reduce's start. Steps and buckets that some rank lacks are left out on every rank.
std::vector<std::vector<std::vector<WaitInterval>>> wait_for_slowest(const std::vector<RankTimelines>& ranks);

// One rank's step against that rank's solo medians (solo_backward_ms, solo_after_backward_ms: step_done − nodes_done).
DecompositionTerms decompose_step(const StepMarks& dp, double solo_backward_ms, double solo_after_backward_ms,
                                  const std::vector<WaitInterval>& waits, bool comm_on_compute_timeline);

// The decomposition of `efficiency`'s loss from every rank's solo and dp timelines (solo and dp both timed, at
// least one step each, the dp steps with their buckets).
EfficiencyDecomposition decompose_efficiency(const std::vector<RankTimelines>& ranks, double efficiency,
                                             bool comm_on_compute_timeline);

}  // namespace sb
