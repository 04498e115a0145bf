// The dp phase's step loop: each rank's training pass with its gradient buckets all-reduced as they become
// ready, then the update; issued through a StepGraph (eager, or one replay of a captured step). Its own file so
// that the gpu tests drive exactly the trainer's dp step (tests/gpu/test_dp_step_graph.cpp).
#pragma once

#include <string>

#include "scalebench/process_group.h"
#include "scalebench/training.h"
#include "src/train/gradient_reducer.h"
#include "src/train/replica.h"
#include "src/train/step_graph.h"

namespace sb {

// Collective: one data-parallel step, enqueued: per sub-step, zero3's gathers for the parts and the parts, the
// training pass with its reductions, and the update (maxbatch's verifying steps of zero3 run it too).
void enqueue_dp_step(Replica& replica, GradientReducer& reducer, const OptimizerSettings& optimizer, int64_t step);

// Collective: warm-up then timed data-parallel steps (run_steps, phase_steps.h); every timed step keeps its
// buckets' durations and its timeline (ready, start and end of each all-reduce, forward and nodes done).
// `phase` names it in progress and messages ("dp", or "dp@2" for a --gpus-sweep point, whose step boundaries are
// agreed over `boundary`: every rank of the job).
RankPhase run_dp_phase(ProcessGroup& group, Replica& replica, GradientReducer& reducer, const TrainOptions& options,
                       StepGraph& graph, const std::string& phase = "dp", ProcessGroup* boundary = nullptr);

}  // namespace sb
