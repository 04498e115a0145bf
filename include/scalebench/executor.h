// Running a planned graph. The CPU executor is the numerical reference: one host arena of the plan's size,
// every node dispatched by op name to the sb::cpu kernel of the same name (a CUDA executor with the same
// dispatch comes next, issue 3).
#pragma once

#include <cstdint>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/planner.h"

namespace sb {

class CpuExecutor {
 public:
  // Allocates plan.total_bytes of host memory (RuntimeFailure if that fails); throws UsageError when the
  // graph holds an op the CPU has no kernel for, before anything runs.
  CpuExecutor(const Graph& graph, const MemoryPlan& plan);

  float* f32(TensorId id);
  int32_t* i32(TensorId id);
  uint8_t* u8(TensorId id);

  // Dropout masks depend on (seed, step): the same step replays the same masks (finite differences), the
  // next step draws fresh ones. Data-parallel ranks use seed = base seed + rank.
  void set_random_stream(uint64_t seed, uint64_t step);
  uint64_t seed() const { return seed_; }
  uint64_t step() const { return step_; }
  uint64_t dropout_offset(const Node& node) const;  // first Philox block of a dropout node this step
  const float* f32(TensorId id) const;

  void run();                          // every node, in order
  void run_nodes(size_t begin, size_t end);
  size_t forward_node_count() const;   // nodes before the first backward node

 private:
  void run_node(const Node& node);

  const Graph& graph_;
  const MemoryPlan& plan_;
  std::vector<unsigned char> arena_;
  uint64_t seed_ = 0, step_ = 0;
  uint64_t blocks_per_step_ = 0;  // Philox blocks all dropout nodes use in one step
};

}  // namespace sb
