// A training step made of sub-steps (include/scalebench/graph.h, SubStep): each sub-step runs its parts (input
// switches, a decode loop repeated once per generated token), then the training pass, then its own optimizer
// step (in data parallelism: its own gradient reduction first). A graph without sub-steps is one sub-step with
// no parts, so every command (run's phases, --check, maxbatch, the profile) goes through these functions and
// ordinary workloads behave exactly as before.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scalebench/executor.h"
#include "scalebench/optimizer.h"

namespace sb {

struct Replica;

// The optimizer's step count (from 1) of sub-step `sub_step` of training step `step` (from 1): every sub-step
// is an optimizer step of its own, as in XLM's train.py.
int64_t optimizer_step_number(const Graph& graph, int64_t step, size_t sub_step);

// Enqueues sub-step `sub_step`'s parts (nothing for a graph without sub-steps).
void run_sub_step_parts(Executor& executor, size_t sub_step);

// The loss bookkeeping of one sub-step: its cross-entropies' weights (phase_steps.h, weight_losses_by_global_rows)
// and counted rows. The targets switch on the device between sub-steps, so an executor that keeps counted rows
// across steps (CUDA, to spare a synchronisation) is told each sub-step's count with its weight.
struct SubStepLosses {
  std::map<TensorId, float> weight;
  std::map<TensorId, int64_t> counted_rows;
};
// Makes sub-step `sub_step`'s loss bookkeeping current on the executor.
void apply_sub_step_losses(Executor& executor, const std::vector<SubStepLosses>& losses, size_t sub_step);

// One whole step: for each sub-step, its loss bookkeeping, its parts (run_sub_step_parts, or `parts(k)` when
// given), the training pass through `train_pass(k)` and the optimizer step through `update(k, optimizer step
// number)`. Dropout draws a fresh stream per sub-step: (seed, step · S + k), restored to (seed, step) at the end.
void for_each_sub_step(Replica& replica, const std::function<void(size_t sub_step)>& train_pass,
                       const std::function<void(size_t sub_step, int64_t optimizer_step)>& update, int64_t step,
                       const std::function<void(size_t sub_step)>& parts = nullptr);

// One step on this rank alone (no communication): parts, every training node and the optimizer, per sub-step.
// With `marks`, each sub-step's training pass marks the executor's timeline (Executor::mark) at
// `marks->forward_done` after its forward nodes and at `marks->nodes_done` after its last node: the solo phase's
// counterpart of the data-parallel step's timeline (the last sub-step's marks survive).
struct LocalStepMarks {
  size_t forward_done = 0, nodes_done = 0;
};
void run_local_step(Replica& replica, const OptimizerSettings& settings, int64_t step,
                    const LocalStepMarks* marks = nullptr);

// One step with a mark between nodes, each repetition of a repeated part included: time per node (summed over
// its runs), per category (op_category, "decode" for every node of a generation part) and of the optimizer.
// Beside the device time, the wall-clock time the calling thread spent enqueueing each node (Executor::StepProfile's
// node_host_ms), by op and in all; the optimizer's enqueueing is not included. node_ms: the device time per node
// (the profile's slowest nodes).
struct SubStepProfile {
  std::map<std::string, double> by_category, by_op;
  double total_ms = 0;
  std::map<std::string, double> host_by_op;
  double host_ms = 0;
  std::vector<double> node_ms;  // device time by node index, summed over the node's runs in the step
};
SubStepProfile profile_sub_steps(Replica& replica, const OptimizerSettings& settings, int64_t step);

}  // namespace sb
