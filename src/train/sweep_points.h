// --gpus-sweep's points between k = 1 (the solo phase) and k = N (the dp phase): for each size k, its groups of
// k ranks train a comm and a dp phase on a team of their own (ProcessGroup::split, a communicator made over the
// team), while the other ranks wait at the same step boundaries (idle_steps, phase_steps.h) so that a stop
// signal, a non-finite loss or a dead rank ends every rank of the job alike. --check runs at each k after the
// main phases, when the trainer's replica is gone.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/process_group.h"
#include "scalebench/training.h"
#include "src/train/replica.h"

namespace sb {

// Collective over `world`: trains the point of size options.sweep_sizes[index] into `point`, reporting each phase
// as "comm@k" and "dp@k". `buckets`: the gradient buckets every point reduces in (the main phases' own).
void run_sweep_point(const TrainOptions& options, size_t index, ProcessGroup& world, Device& device,
                     Backend backend, Replica& replica, uint64_t weight_seed,
                     const std::vector<GradientBucket>& buckets, SweepPoint& point,
                     const std::function<void(const std::string& phase)>& on_phase_done);

// Collective over `world`: --check at the point's size, every group at once ("check@k").
void check_sweep_point(const TrainOptions& options, const ReplicaOptions& replica_options, ProcessGroup& world,
                       Device& device, Backend backend, SweepPoint& point,
                       const std::function<void(const std::string& phase)>& on_phase_done);

}  // namespace sb
