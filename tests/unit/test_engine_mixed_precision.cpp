// The bf16 and fp16 (mixed-precision) graphs of every workload, built and planned without a device: activations
// and their gradients are 16-bit, while parameters, weight gradients, losses and normalisation statistics stay
// fp32; every weight is cast once per step, however many products read it; each weight gradient that a
// single GEMM produces is written by that GEMM in fp32 (no 16-bit round trip), a convolution's weight gradient
// takes one cast from the compute dtype, and the plan shrinks.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

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

// (workload, compute dtype): bf16 or fp16.
class MixedPrecision : public ::testing::TestWithParam<std::tuple<const Workload*, DType>> {
 protected:
  const Workload& workload() const { return *std::get<0>(GetParam()); }
  DType compute() const { return std::get<1>(GetParam()); }
};

TEST_P(MixedPrecision, Activations16BitParametersGradientsAndStatisticsFp32) {
  Built g;
  build(workload(), compute(), g);
  int half_activations = 0;
  for (const TensorInfo& t : g.graph.tensors()) {
    if (t.role == TensorRole::kParameter || t.role == TensorRole::kGradient) {
      EXPECT_EQ(t.dtype, DType::kFloat32) << t.name;
    }
    const bool statistic = t.name.find("mean") != std::string::npos || t.name.find("rstd") != std::string::npos ||
                           t.name.find("logsumexp") != std::string::npos || t.name.find("loss") != std::string::npos;
    if (t.role == TensorRole::kActivation && statistic) EXPECT_EQ(t.dtype, DType::kFloat32) << t.name;
    if (t.role == TensorRole::kActivation && t.dtype == compute()) ++half_activations;
    EXPECT_TRUE(t.dtype != (compute() == DType::kFloat16 ? DType::kBFloat16 : DType::kFloat16)) << t.name;
  }
  EXPECT_GT(half_activations, 20);
  for (const Node& node : g.graph.nodes()) {
    if (node.op != "gemm") continue;
    EXPECT_EQ(g.graph.tensor(node.inputs[0]).dtype, compute()) << node.op;
    EXPECT_EQ(g.graph.tensor(node.inputs[1]).dtype, compute()) << node.op;
  }
}

// The operands kernels read as fp32 whatever the compute dtype (tables, LayerNorm gains, statistics) are fp32
// in the graph, and a GEMM's bias has its result's dtype: what the CUDA executor checks when it runs.
TEST_P(MixedPrecision, OperandDtypesAreWhatTheKernelsRead) {
  Built g;
  build(workload(), compute(), g);
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
  build(workload(), compute(), g);
  // Once per pass: a graph with sub-steps (unsupmt) casts a weight once in its training pass and once more in
  // the generation parts before it, which run in other sub-steps (graph.h, SubStep).
  std::map<TensorId, int> parameter_casts, parts_casts;
  std::map<TensorId, std::string> written_by;  // tensor -> the op of the node that writes it
  for (const Node& node : g.graph.nodes()) {
    for (TensorId out : node.outputs) written_by[out] = node.op;
  }
  int gradients_written_by_producer = 0;
  for (size_t n = 0; n < g.graph.nodes().size(); ++n) {
    const Node& node = g.graph.nodes()[n];
    if (node.inputs.empty()) continue;  // zero_fill of an unused parameter's gradient, san_turn_mask
    const TensorInfo& in = g.graph.tensor(node.inputs[0]);
    if (node.op == "cast" && !node.backward && in.role == TensorRole::kParameter) {
      ++(n < g.graph.training_begin() ? parts_casts : parameter_casts)[node.inputs[0]];
    }
    // A parameter's gradient goes through a cast back only after a convolution's backward-filter pass, which
    // writes the filter's dtype (the cuDNN runner, src/cuda/conv2d_cudnn.cpp, describes x, dy and dw with one
    // dtype; PyTorch autocast casts every weight gradient back the same way). GEMMs and column sums write
    // theirs in fp32. A filter that several convolutions read (pix2pixhd's discriminators, applied to the real
    // and to the generated image; maskrcnn's RPN head over five FPN levels) has its passes' gradients summed
    // before that cast, in the compute dtype, as autograd accumulates the gradient of autocast's cached cast.
    // StyleGAN's equalized learning rate multiplies every weight at run time after its cast (a `scale` node):
    // its gradient passes that scale, and a fused up/down conv's 4 x 4 filter gradient folds back to the 3 x 3
    // weight (fused_conv_weight_backward); GEMMs read the scaled copy, so their weight gradients are 16-bit too.
    if (node.op == "cast" && node.backward && g.graph.tensor(node.outputs[0]).role == TensorRole::kGradient) {
      TensorId dw = node.inputs[0];
      bool scaled = false;
      for (const Node& scale : g.graph.nodes()) {
        if (scale.op == "scale" && scale.backward && scale.outputs[0] == dw) dw = scale.inputs[0], scaled = true;
      }
      auto filter_pass = [&](TensorId t) {
        const std::string& op = written_by[t];
        return op == "conv2d_backward_filter" ||
               (scaled && (op == "gemm" || op == "fused_conv_weight_backward"));
      };
      bool from_filter_passes = filter_pass(dw);
      for (const Node& sum : g.graph.nodes()) {
        if (sum.op != "add_n" || sum.outputs[0] != dw) continue;
        from_filter_passes = true;
        for (TensorId term : sum.inputs) from_filter_passes = from_filter_passes && filter_pass(term);
      }
      EXPECT_TRUE(from_filter_passes) << g.graph.tensor(node.outputs[0]).name << " written by " << written_by[dw];
      ++gradients_written_by_producer;
    }
    const bool producer = node.op == "gemm" || node.op == "bias_backward";
    if (producer && node.backward && g.graph.tensor(node.outputs[0]).role == TensorRole::kGradient) {
      EXPECT_EQ(g.graph.tensor(node.outputs[0]).dtype, DType::kFloat32);
      ++gradients_written_by_producer;
    }
  }
  EXPECT_FALSE(parameter_casts.empty());
  for (const auto& [tensor, count] : parts_casts) EXPECT_EQ(count, 1) << g.graph.tensor(tensor).name;
  int cast_and_used = 0;
  for (const auto& [tensor, count] : parameter_casts) {
    EXPECT_EQ(count, 1) << g.graph.tensor(tensor).name;
    // A parameter declared unused (mt_dnn's pooler: computed, as BertModel does, but not read by the loss)
    // is cast for its forward product yet has no gradient producer: its gradient is zero-filled.
    if (!g.graph.tensor(tensor).unused_this_step) ++cast_and_used;
  }
  // Every cast parameter's gradient comes from its GEMM, column sum or convolution, except a tied table, whose
  // two contributions (lookup and product) are summed.
  EXPECT_GE(gradients_written_by_producer, cast_and_used - 1);
}

// At a batch where activations outweigh the bf16 weight copies (as at full scale; at batch 2 of the tiny
// dimensions the copies dominate), the activation arena shrinks.
TEST_P(MixedPrecision, PlanIsSmallerThanFp32) {
  Built fp32, half;
  build(workload(), DType::kFloat32, fp32, 64);
  build(workload(), compute(), half, 64);
  // Parameters and their gradients are fp32 in both: the same bytes. (The regions' extents may differ by the
  // alignment padding of their last tensor: they are laid out in the order the backward pass finishes the
  // gradients, and a weight behind a cast finishes after its conv's bias, e.g. pix2pixhd's first conv.)
  EXPECT_EQ(plan_categories(half.graph, half.plan).parameters, plan_categories(fp32.graph, fp32.plan).parameters);
  EXPECT_EQ(plan_categories(half.graph, half.plan).gradients, plan_categories(fp32.graph, fp32.plan).gradients);
  EXPECT_NEAR(double(half.plan.parameter_bytes), double(fp32.plan.parameter_bytes), double(PlanOptions{}.alignment));
  EXPECT_LT(half.plan.activation_peak_bytes, fp32.plan.activation_peak_bytes);
  EXPECT_EQ(half.graph.parameter_count(), fp32.graph.parameter_count());
}

TEST(MixedPrecisionGraph, TheCpuDeviceRefuses16BitGraphsAndTheBuilderRefusesOtherDtypes) {
  for (DType half : {DType::kBFloat16, DType::kFloat16}) {
    Built g;
    build(find_workload("bert_base"), half, g);
    EXPECT_THROW(CpuExecutor(g.graph, g.plan), UsageError) << dtype_name(half);
  }
  Graph graph;
  EXPECT_NO_THROW(GraphBuilder(graph, DType::kFloat16));
  EXPECT_THROW(GraphBuilder(graph, DType::kInt32), UsageError);
  EXPECT_THROW(GraphBuilder(graph, DType::kFloat64), UsageError);
}

// A CPU executor never scales the loss (it runs fp32 graphs only).
TEST(MixedPrecisionGraph, TheCpuExecutorHasNoLossScale) {
  Built g;
  build(find_workload("bert_base"), DType::kFloat32, g);
  CpuExecutor cpu(g.graph, g.plan);
  EXPECT_FALSE(cpu.loss_scale_state().has_value());
}

INSTANTIATE_TEST_SUITE_P(Workloads, MixedPrecision,
                         ::testing::Combine(::testing::ValuesIn(workload_registry()),
                                            ::testing::Values(DType::kBFloat16, DType::kFloat16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)->info().name) + "_" +
                                  dtype_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace sb
