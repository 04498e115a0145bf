// Activation recomputation (recompute_in_backward, autodiff.h): GELU outputs computed again in the backward
// pass give bit-identical gradients on the CPU device (the same kernel on the same input), every backward
// use reads the recomputed copy, and the full-scale bf16 BERT plans shrink by about the GELU outputs (one
// (tokens, 3072) bf16 tensor per layer: 12 x 96 MiB at batch 128 x seq 128).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

struct Model {
  Graph graph;
  BuiltWorkload built;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
  Model(const Workload& workload, WorkloadScale scale, int64_t batch, DType compute, bool recompute) {
    GraphBuilder builder(graph, compute);
    built = workload.build(builder, batch, scale);
    gradients = append_backward(graph, built.loss);
    if (recompute) recompute_in_backward(graph, {"gelu"});
    plan = plan_memory(graph);
  }
};

TEST(EngineRecompute, GeluRecomputedGivesBitIdenticalGradients) {
  for (const char* name : {"bert_base", "bert_finetune"}) {
    const Workload& workload = find_workload(name);
    Model kept(workload, WorkloadScale::kTiny, 3, DType::kFloat32, false);
    Model again(workload, WorkloadScale::kTiny, 3, DType::kFloat32, true);
    int recomputed = 0;
    for (const Node& node : again.graph.nodes()) recomputed += node.backward && node.op == "gelu";
    EXPECT_GT(recomputed, 0) << name;
    std::vector<std::unique_ptr<CpuExecutor>> executors;
    for (Model* m : {&kept, &again}) {
      executors.push_back(std::make_unique<CpuExecutor>(m->graph, m->plan));
      CpuExecutor& e = *executors.back();
      workload.synthesize(m->graph, 5, [&](TensorId id, const void* data, size_t bytes) { e.write_tensor(id, data, bytes); });
      std::mt19937 random(3);
      std::normal_distribution<float> normal(0.0f, 0.1f);
      for (TensorId p : m->graph.tensors_with_role(TensorRole::kParameter)) {
        for (int64_t i = 0; i < m->graph.tensor(p).elements(); ++i) e.f32(p)[i] = normal(random);
      }
      e.set_random_stream(9, 0);
      e.run();
    }
    for (const auto& [parameter, gradient] : kept.gradients) {
      const TensorInfo& info = kept.graph.tensor(parameter);
      const TensorId other = again.gradients.at(again.graph.find_tensor(info.name));
      EXPECT_EQ(std::memcmp(executors[0]->f32(gradient), executors[1]->f32(other), info.bytes()), 0)
          << name << " " << info.name;
    }
  }
}

TEST(EngineRecompute, NoBackwardNodeReadsAForwardGeluOutput) {
  Model again(find_workload("bert_base"), WorkloadScale::kTiny, 2, DType::kFloat32, true);
  std::set<TensorId> forward_gelu;
  for (const Node& node : again.graph.nodes()) {
    if (!node.backward && node.op == "gelu") forward_gelu.insert(node.outputs[0]);
    if (!node.backward) continue;
    for (TensorId input : node.inputs) EXPECT_EQ(forward_gelu.count(input), 0u) << node.op;
  }
}

TEST(EngineRecompute, FullScaleBertPlansShrink) {
  for (const char* name : {"bert_base", "bert_finetune"}) {
    const Workload& workload = find_workload(name);
    const int64_t batch = workload.info().default_batch;
    Model kept(workload, WorkloadScale::kFull, batch, DType::kBFloat16, false);
    Model again(workload, WorkloadScale::kFull, batch, DType::kBFloat16, true);
    EXPECT_LT(again.plan.total_bytes + (512ull << 20), kept.plan.total_bytes) << name;
  }
}

TEST(EngineRecompute, OnlyGeluCanBeRecomputed) {
  Graph graph;
  EXPECT_THROW(recompute_in_backward(graph, {"relu"}), UsageError);
}

}  // namespace
}  // namespace sb
