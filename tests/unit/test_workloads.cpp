// Every registered workload: its full-scale graph has exactly shared/WORKLOADS.md's parameter count and can
// be differentiated and planned; its tiny graph trains on the CPU device (finite loss near log(vocab) at
// the start, falling on a repeated batch under plain SGD).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

TEST(Workloads, RegistryNamesAndLookup) {
  ASSERT_FALSE(workload_registry().empty());
  EXPECT_EQ(find_workload("transformer_big").info().unit, "tokens");
  EXPECT_THROW(find_workload("resnet9000"), UsageError);
  EXPECT_EQ(parse_workload_scale("tiny"), WorkloadScale::kTiny);
  EXPECT_THROW(parse_workload_scale("huge"), UsageError);
}

class EveryWorkload : public ::testing::TestWithParam<const Workload*> {};

TEST_P(EveryWorkload, FullScaleParameterCountAndPlan) {
  const Workload& workload = *GetParam();
  Graph graph;
  GraphBuilder builder(graph);
  BuiltWorkload built = workload.build(builder, workload.info().default_batch, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), workload.info().full_parameters);
  const auto gradients = append_backward(graph, built.loss);
  EXPECT_EQ(gradients.size(), graph.tensors_with_role(TensorRole::kParameter).size());
  MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(plan.parameter_bytes, plan.gradient_bytes);
  EXPECT_GE(plan.parameter_bytes, static_cast<uint64_t>(workload.info().full_parameters) * 4);
  EXPECT_GT(plan.activation_peak_bytes, 0u);
  EXPECT_GT(built.units_per_step, 0);
}

TEST_P(EveryWorkload, TinyScaleTrainsOnTheCpu) {
  const Workload& workload = *GetParam();
  Graph graph;
  GraphBuilder builder(graph);
  BuiltWorkload built = workload.build(builder, 3, WorkloadScale::kTiny);
  const auto gradients = append_backward(graph, built.loss);
  MemoryPlan plan = plan_memory(graph);
  CpuExecutor executor(graph, plan);
  workload.synthesize(graph, 42, [&](TensorId id, const void* data, size_t bytes) {
    ASSERT_EQ(bytes, graph.tensor(id).bytes()) << graph.tensor(id).name;
    std::memcpy(executor.f32(id), data, bytes);
  });
  uint32_t seed = 1;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {  // small random weights, LN gains 1
    const TensorInfo& info = graph.tensor(p);
    const bool norm = info.name.find("norm") != std::string::npos || info.name.find("LayerNorm") != std::string::npos;
    std::mt19937 random(seed++);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    for (int64_t i = 0; i < info.elements(); ++i) {
      executor.f32(p)[i] = norm && info.name.find("bias") == std::string::npos ? 1.0f : normal(random);
    }
  }
  executor.run();
  const float first = *executor.f32(built.loss);
  ASSERT_TRUE(std::isfinite(first));
  for (int step = 0; step < 20; ++step) {
    for (const auto& [parameter, gradient] : gradients) {
      for (int64_t i = 0; i < graph.tensor(parameter).elements(); ++i) {
        executor.f32(parameter)[i] -= 0.5f * executor.f32(gradient)[i];
      }
    }
    executor.run();
  }
  const float last = *executor.f32(built.loss);
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.8f * first) << workload.info().name << ": first " << first << " last " << last;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryWorkload, ::testing::ValuesIn(workload_registry()),
                         [](const auto& info) { return info.param->info().name; });

}  // namespace
}  // namespace sb
