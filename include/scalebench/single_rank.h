// One rank training one workload (issue 3's `scalebench run`; the data-parallel trainer builds on it): build
// the graph, differentiate, plan, stop before allocating if it cannot fit (saying which batch would), fill
// inputs and weights, then train with the chosen optimizer (AdamW by default) and time every step.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/optimizer.h"
#include "scalebench/precision.h"
#include "scalebench/workload.h"

namespace sb {

struct SingleRankOptions {
  std::string workload;
  int64_t batch = 0;  // 0: the workload's default
  WorkloadScale scale = WorkloadScale::kFull;
  int warmup_steps = 3;
  int steps = 20;
  uint64_t seed = 1;
  OptimizerSettings optimizer;  // AdamW unless --optimizer says otherwise
  Precision precision = Precision::kFp32;  // tf32 and bf16: CUDA only
  bool profile_step = true;                 // one extra step timed node by node (breakdown_ms)
  bool recompute = false;                   // --recompute: GELU outputs computed again in the backward pass
};

struct SingleRankResult {
  std::string workload;
  int64_t batch = 0;
  int64_t parameters = 0;
  double units_per_step = 0;
  double train_flops_per_step = 0;  // matrix products, forward and backward
  uint64_t plan_bytes = 0;          // arena + optimizer state
  std::vector<double> step_ms;      // timed steps only
  std::vector<float> losses;        // every step, warm-up included
  // The profiled step's time by op category (op_category in graph.h) plus "optimizer", largest first.
  std::vector<std::pair<std::string, double>> breakdown_ms;
  std::vector<std::pair<std::string, double>> op_ms;  // the same step by op name (backward nodes apart)
};

// Bytes a run needs on the device: the plan's arena plus the optimizer's state (`state_buffers` x parameter
// bytes: 2 for the Adam family, 1 for SGD momentum and NAG).
uint64_t single_rank_bytes(const Workload& workload, int64_t batch, WorkloadScale scale, Precision precision,
                           bool recompute = false, int state_buffers = 2);

// Throws UsageError for bad options, RuntimeFailure when the plan does not fit the device (before allocating:
// "needs X GiB, device has Y GiB; largest batch that fits: B").
SingleRankResult train_single_rank(const SingleRankOptions& options, Device& device);

}  // namespace sb
