// What a training step replayed from a CUDA graph relies on (issue 25, src/cuda/step_value.h), checked on the
// host: StepValue::resolve (the host's value in an eager step, at_capture + per_step · replays under replay),
// and the executor's growth rates: k training steps after a captured one, every dropout node's Philox offset,
// step() and the optimizer's step count are the captured values plus k · dropout_offset_per_step() /
// steps_per_training_step(), with and without sub-steps (each sub-step draws a stream of its own).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/cuda/step_value.h"
#include "src/train/replica.h"
#include "src/train/sub_steps.h"

namespace sb {
namespace {

TEST(StepValue, EagerResolvesToTheHostValue) {
  EXPECT_EQ((cuda::StepValue{7, 3, nullptr}.resolve()), 7);
  EXPECT_EQ(cuda::eager_value(123456789012345).resolve(), 123456789012345);
  EXPECT_EQ(cuda::eager_value(0).resolve(), 0);
  // A Philox offset near 2^64 (the dropout tests' wrap) survives the round trip through int64 unchanged.
  const uint64_t offset = ~uint64_t{0} - 5;
  EXPECT_EQ(static_cast<uint64_t>(cuda::eager_value(static_cast<int64_t>(offset)).resolve()), offset);
}

// The counter is read through the pointer at resolve time, as a replayed kernel reads it on the device.
TEST(StepValue, ReplayedResolvesFromTheCounter) {
  int64_t replays = 0;
  const cuda::StepValue value{1000, 37, &replays};
  for (int64_t r : {0, 1, 5}) {
    replays = r;
    EXPECT_EQ(value.resolve(), 1000 + 37 * r) << "replays " << r;
  }
  replays = 2;
  EXPECT_EQ((cuda::StepValue{-4, 0, &replays}.resolve()), -4);  // a value that does not grow
}

// Two dropout nodes of different sizes (so of different Philox ranges) before and after autodiff, which adds
// their backward redraws.
struct DropoutGraph {
  Graph graph;
  MemoryPlan plan;

  explicit DropoutGraph(size_t sub_steps) {
    GraphBuilder b(graph);
    const TensorId x = b.input("x", {16, 8});
    const TensorId h = b.linear(x, b.parameter("w", {8, 8}));
    const TensorId first = b.dropout(h, 0.5);
    const TensorId second = b.dropout(b.linear(first, b.parameter("v", {12, 8})), 0.2);  // (16, 12)
    const TensorId loss = b.softmax_cross_entropy(second, b.input("t", {16}, DType::kInt32), 0.0, -1);
    append_backward(graph, loss);
    std::vector<SubStep> steps(sub_steps);
    for (size_t k = 0; k < sub_steps; ++k) steps[k].name = "sub" + std::to_string(k);
    if (sub_steps > 1) graph.set_sub_steps(steps);
    plan = plan_memory(graph);
  }
};

// What one training step's sub-steps hand the kernels: per sub-step, each random node's offset, step() and the
// optimizer's step count.
struct StepDraws {
  std::vector<std::vector<uint64_t>> offsets;  // [sub-step][random node]
  std::vector<uint64_t> steps;
  std::vector<int64_t> optimizer_steps;
};

// Training step `step` (from 1) as the trainer runs it (phase_steps.cpp: the stream (seed, step - 1), then
// for_each_sub_step); nothing is computed, only what the kernels would be given is recorded.
StepDraws draws_of(Replica& replica, int64_t step) {
  Executor& e = *replica.executor;
  e.set_random_stream(42, static_cast<uint64_t>(step - 1));
  StepDraws draws;
  for_each_sub_step(
      replica,
      [&](size_t) {
        std::vector<uint64_t> offsets;
        for (const Node& node : replica.graph.nodes()) {
          if (node.attributes.count("block_offset") != 0) offsets.push_back(e.dropout_offset(node));
        }
        draws.offsets.push_back(offsets);
        draws.steps.push_back(e.step());
      },
      [&](size_t, int64_t optimizer_step) { draws.optimizer_steps.push_back(optimizer_step); }, step,
      [](size_t) {});
  return draws;
}

void check_growth(size_t sub_steps) {
  SCOPED_TRACE(std::to_string(sub_steps) + " sub-steps");
  Replica replica;
  DropoutGraph built(sub_steps);
  replica.graph = built.graph;
  replica.plan = built.plan;
  replica.executor = std::make_unique<CpuExecutor>(replica.graph, replica.plan);
  const Executor& e = *replica.executor;
  ASSERT_EQ(e.steps_per_training_step(), static_cast<int64_t>(sub_steps));
  const auto per_offset = static_cast<int64_t>(e.dropout_offset_per_step());
  const int64_t per_step = e.steps_per_training_step();
  ASSERT_GT(per_offset, 0);

  for (int64_t captured : {1, 4}) {  // the training step captured into a graph
    const StepDraws at_capture = draws_of(replica, captured);
    ASSERT_EQ(at_capture.offsets.size(), sub_steps);
    ASSERT_EQ(at_capture.offsets[0].size(), 4u);  // two forward nodes and their backward redraws
    EXPECT_NE(at_capture.offsets[0][0], at_capture.offsets[0][1]) << "the two nodes share a range";
    for (int64_t r : {0, 1, 5}) {  // replays since capture
      SCOPED_TRACE("captured step " + std::to_string(captured) + ", replays " + std::to_string(r));
      const StepDraws later = draws_of(replica, captured + r);
      for (size_t k = 0; k < sub_steps; ++k) {
        for (size_t i = 0; i < at_capture.offsets[k].size(); ++i) {
          const cuda::StepValue offset{static_cast<int64_t>(at_capture.offsets[k][i]), per_offset, &r};
          EXPECT_EQ(static_cast<uint64_t>(offset.resolve()), later.offsets[k][i]) << "sub-step " << k << " node " << i;
        }
        const cuda::StepValue step{static_cast<int64_t>(at_capture.steps[k]), per_step, &r};
        EXPECT_EQ(static_cast<uint64_t>(step.resolve()), later.steps[k]) << "sub-step " << k;
        const cuda::StepValue optimizer_step{at_capture.optimizer_steps[k], per_step, &r};
        EXPECT_EQ(optimizer_step.resolve(), later.optimizer_steps[k]) << "sub-step " << k;
      }
    }
  }
}

TEST(StepValue, ExecutorOffsetsGrowByThePerStepRates) { check_growth(1); }

// Each sub-step draws its own stream (seed, step · S + k): the per-step rates are S times a sub-step's, which
// a rate without the sub-step count would miss.
TEST(StepValue, ExecutorOffsetsGrowByThePerStepRatesWithSubSteps) { check_growth(3); }

}  // namespace
}  // namespace sb
