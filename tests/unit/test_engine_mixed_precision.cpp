// The bf16 (mixed-precision) graph of every workload, built and planned without a device: activations and
// their gradients are bf16, while parameters, weight gradients, losses and normalisation statistics stay
// fp32; every weight is cast once per step, however many products read it; each weight gradient that a
// single GEMM produces is written by that GEMM in fp32 (no bf16 round trip), and the plan shrinks.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

struct Built {
  Graph graph;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
};

void build(const Workload& workload, DType compute, Built& out, int64_t batch = 2) {
  GraphBuilder builder(out.graph, compute);
  const BuiltWorkload built = workload.build(builder, batch, WorkloadScale::kTiny);
  out.gradients = append_backward(out.graph, built.loss);
  out.plan = plan_memory(out.graph);
}

class MixedPrecision : public ::testing::TestWithParam<const Workload*> {};

TEST_P(MixedPrecision, ActivationsBf16ParametersGradientsAndStatisticsFp32) {
  Built g;
  build(*GetParam(), DType::kBFloat16, g);
  int bf16_activations = 0;
  for (const TensorInfo& t : g.graph.tensors()) {
    if (t.role == TensorRole::kParameter || t.role == TensorRole::kGradient) {
      EXPECT_EQ(t.dtype, DType::kFloat32) << t.name;
    }
    const bool statistic = t.name.find("mean") != std::string::npos || t.name.find("rstd") != std::string::npos ||
                           t.name.find("logsumexp") != std::string::npos || t.name.find("loss") != std::string::npos;
    if (t.role == TensorRole::kActivation && statistic) EXPECT_EQ(t.dtype, DType::kFloat32) << t.name;
    if (t.role == TensorRole::kActivation && t.dtype == DType::kBFloat16) ++bf16_activations;
  }
  EXPECT_GT(bf16_activations, 20);
  for (const Node& node : g.graph.nodes()) {
    if (node.op != "gemm") continue;
    EXPECT_EQ(g.graph.tensor(node.inputs[0]).dtype, DType::kBFloat16) << node.op;
    EXPECT_EQ(g.graph.tensor(node.inputs[1]).dtype, DType::kBFloat16) << node.op;
  }
}

// The operands kernels read as fp32 whatever the compute dtype (tables, LayerNorm gains, statistics) are fp32
// in the graph, and a GEMM's bias has its result's dtype: what the CUDA executor checks when it runs.
TEST_P(MixedPrecision, OperandDtypesAreWhatTheKernelsRead) {
  Built g;
  build(*GetParam(), DType::kBFloat16, g);
  auto dtype = [&](TensorId id) { return g.graph.tensor(id).dtype; };
  for (const Node& node : g.graph.nodes()) {
    if (node.op == "embedding" || node.op == "add_broadcast") EXPECT_EQ(dtype(node.inputs[1]), DType::kFloat32) << node.op;
    if (node.op == "layernorm") {
      EXPECT_EQ(dtype(node.inputs[1]), DType::kFloat32);
      EXPECT_EQ(dtype(node.inputs[2]), DType::kFloat32);
      EXPECT_EQ(dtype(node.outputs[1]), DType::kFloat32);
    }
    if (node.op == "gemm" && node.inputs.size() > 2) EXPECT_EQ(dtype(node.inputs[2]), dtype(node.outputs[0]));
    if (node.op == "bias_backward" || node.op == "embedding_backward") {
      EXPECT_EQ(dtype(node.outputs[0]), DType::kFloat32) << node.op;
    }
  }
}

TEST_P(MixedPrecision, EachParameterCastOnceAndItsGradientWrittenInFp32ByItsProducer) {
  Built g;
  build(*GetParam(), DType::kBFloat16, g);
  std::map<TensorId, int> parameter_casts;
  int gradients_written_by_producer = 0;
  for (const Node& node : g.graph.nodes()) {
    const TensorInfo& in = g.graph.tensor(node.inputs[0]);
    if (node.op == "cast" && !node.backward && in.role == TensorRole::kParameter) ++parameter_casts[node.inputs[0]];
    // A parameter's gradient never goes through a cast back: the GEMM or column sum writes it in fp32.
    if (node.op == "cast" && node.backward) {
      EXPECT_NE(g.graph.tensor(node.outputs[0]).role, TensorRole::kGradient) << g.graph.tensor(node.outputs[0]).name;
    }
    const bool producer = node.op == "gemm" || node.op == "bias_backward";
    if (producer && node.backward && g.graph.tensor(node.outputs[0]).role == TensorRole::kGradient) {
      EXPECT_EQ(g.graph.tensor(node.outputs[0]).dtype, DType::kFloat32);
      ++gradients_written_by_producer;
    }
  }
  EXPECT_FALSE(parameter_casts.empty());
  for (const auto& [tensor, count] : parameter_casts) EXPECT_EQ(count, 1) << g.graph.tensor(tensor).name;
  // Every cast parameter's gradient comes from its GEMM or column sum, except a tied table, whose two
  // contributions (lookup and product) are summed.
  EXPECT_GE(gradients_written_by_producer, static_cast<int>(parameter_casts.size()) - 1);
}

// At a batch where activations outweigh the bf16 weight copies (as at full scale; at batch 2 of the tiny
// dimensions the copies dominate), the activation arena shrinks.
TEST_P(MixedPrecision, PlanIsSmallerThanFp32) {
  Built fp32, bf16;
  build(*GetParam(), DType::kFloat32, fp32, 64);
  build(*GetParam(), DType::kBFloat16, bf16, 64);
  EXPECT_EQ(bf16.plan.parameter_bytes, fp32.plan.parameter_bytes);
  EXPECT_EQ(bf16.plan.gradient_bytes, fp32.plan.gradient_bytes);
  EXPECT_LT(bf16.plan.activation_peak_bytes, fp32.plan.activation_peak_bytes);
  EXPECT_EQ(bf16.graph.parameter_count(), fp32.graph.parameter_count());
}

TEST(MixedPrecisionGraph, TheCpuDeviceRefusesBf16AndTheBuilderRefusesOtherDtypes) {
  Built g;
  build(find_workload("bert_base"), DType::kBFloat16, g);
  EXPECT_THROW(CpuExecutor(g.graph, g.plan), UsageError);
  Graph graph;
  EXPECT_THROW(GraphBuilder(graph, DType::kFloat16), UsageError);
  EXPECT_THROW(GraphBuilder(graph, DType::kInt32), UsageError);
}

INSTANTIATE_TEST_SUITE_P(Workloads, MixedPrecision, ::testing::ValuesIn(workload_registry()),
                         [](const auto& info) { return info.param->info().name; });

}  // namespace
}  // namespace sb
