// `run --gpus-sweep`: from the command line and the job's gathered topology to the sizes and groups the trainer
// trains (TrainOptions::sweep_sizes, sweep_groups; include/scalebench/gpus_sweep.h).
#pragma once

#include <string>

#include "scalebench/device.h"
#include "scalebench/process_group.h"
#include "scalebench/result.h"

namespace sb {

// Collective (the topology is gathered from every node). Fills options' sweep fields when --gpus-sweep was
// given; returns a notice when the curve is shorter than asked (one rank: k = 1 only), else "". Throws UsageError,
// the same on every rank: --concurrent-groups without --gpus-sweep, a size above N or (concurrent) not dividing
// N, a sweep without the dp phase, or k = 1 listed without the solo phase.
// `sweep` is --gpus-sweep's text ("" when not given), `concurrent` --concurrent-groups.
std::string plan_gpus_sweep(const std::string& sweep, bool concurrent, ProcessGroup& group, const Device& device,
                            TrainOptions& options);

}  // namespace sb
