// The stylegan workload (workloads/stylegan.cpp): shared/WORKLOADS.md §5's parameter counts by network and by
// module at full scale (graph build only), the EMA copy reported as frozen, the forward multiply-adds per image,
// and the step's structure: the EMA first, R1's input gradient as forward nodes, G and D in parameter groups of
// their own. Training on the CPU and finite differences: test_workloads.cpp (Registry/EveryWorkload.*stylegan).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "scalebench/autodiff.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "workloads/stylegan_networks.h"

namespace sb {
namespace {

// The module a parameter belongs to, in §5's breakdown.
std::string module_of(const std::string& name) {
  if (name.rfind("G_mapping.", 0) == 0) return "mapping";
  if (name.find(".Const.const") != std::string::npos) return "const";
  if (name.find("ToRGB") != std::string::npos) return "torgb";
  if (name.find(".noise_strength") != std::string::npos || name.find(".StyleMod.") != std::string::npos ||
      (name.rfind("G_synthesis.layer", 0) == 0 && name.find(".bias") != std::string::npos)) {
    return "epilogues";
  }
  if (name.rfind("G_synthesis.", 0) == 0) return "g_convs";
  if (name.find("FromRGB") != std::string::npos) return "fromrgb";
  if (name.rfind("D.4x4.", 0) == 0) return "d_4x4";
  return "d_convs";
}

TEST(StyleGan, FullScaleCountsByNetworkAndModule) {
  const Workload& workload = find_workload("stylegan");
  EXPECT_EQ(workload.info().full_parameters, 26219627 + 23087249);
  EXPECT_EQ(workload.info().frozen_parameters, 26219627);
  EXPECT_EQ(workload.info().default_batch, 16);
  Graph graph;
  GraphBuilder builder(graph);
  workload.build(builder, 16, WorkloadScale::kFull);
  std::map<std::string, int64_t> groups, modules;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = graph.tensor(p);
    groups[info.parameter_group] += info.elements();
    modules[module_of(info.name)] += info.elements();
  }
  EXPECT_EQ(groups, (std::map<std::string, int64_t>{{"D", 23087249}, {"G", 26219627}}));
  EXPECT_EQ(modules["mapping"], 2101248);
  EXPECT_EQ(modules["g_convs"], 18872064);
  EXPECT_EQ(modules["epilogues"], 5230464);
  EXPECT_EQ(modules["const"], 8192);
  EXPECT_EQ(modules["torgb"], 7659);
  EXPECT_EQ(modules["d_convs"], 16517328);
  EXPECT_EQ(modules["d_4x4"], 6559745);
  EXPECT_EQ(modules["fromrgb"], 10176);
  EXPECT_EQ(graph.parameter_count(), 49306876);
  // Gs: one fp32 kState copy per G parameter, counted as frozen, never a parameter.
  int64_t ema = 0, states = 0;
  for (TensorId s : graph.tensors_with_role(TensorRole::kState)) {
    ++states;
    EXPECT_TRUE(graph.tensor(s).frozen_weight) << graph.tensor(s).name;
    ema += graph.tensor(s).elements();
  }
  EXPECT_EQ(ema, 26219627);
  EXPECT_EQ(graph.frozen_parameter_count(), 26219627);
  EXPECT_GT(states, 100);
}

TEST(StyleGan, ForwardMultiplyAddsPerImage) {
  // §5: G and D forward 31.94 GMAC per image at 1024² (replayed from networks_stylegan.py by
  // scripts/pytorch_stylegan_model.py forward_macs: the same two numbers).
  Graph graph;
  GraphBuilder builder(graph);
  workloads::StyleGanNetworks nets(builder, workloads::StyleGanShape{10, 8192, 512, 512, 8, 7});
  EXPECT_EQ(nets.generator_forward_macs(), 31938543616.0);
  EXPECT_EQ(nets.discriminator_forward_macs(), 31935504896.0);
}

// One graph per step: the EMA updates first (after the previous step's optimizer; only the weight scales before), the R1 input gradient as
// forward nodes (a fill seed, data passes of D's convolutions), one loss; every parameter gets a gradient, and
// the unused lower-resolution ToRGB/FromRGB layers (lod > 0) zero-filled ones.
TEST(StyleGan, StepStructure) {
  const Workload& workload = find_workload("stylegan");
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = workload.build(builder, 4, WorkloadScale::kTiny);
  // Only the weights' equalized-learning-rate scale nodes (built with the networks) may come before them.
  size_t ema_nodes = 0, first_other = graph.nodes().size();
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const std::string& op = graph.nodes()[n].op;
    if (op == "ema_update") {
      ++ema_nodes;
      EXPECT_LT(n, first_other) << "an EMA update after the step's other nodes";
    } else if (op != "scale" && first_other == graph.nodes().size()) {
      first_other = n;
    }
  }
  int64_t g_tensors = 0;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) g_tensors += graph.tensor(p).parameter_group == "G";
  EXPECT_EQ(static_cast<int64_t>(ema_nodes), g_tensors);
  std::map<std::string, int> forward_ops;
  for (const Node& node : graph.nodes()) ++forward_ops[node.op];
  EXPECT_EQ(forward_ops["fill"], 3) << "the R1 seed and the two synthesis passes' constant inputs";
  // Fused up convs of G (res 16 in the tiny graph) are backward-data nodes run forward too: one per G pass.
  EXPECT_EQ(forward_ops["conv2d_backward_data"], 2 + 6) << "two G passes' fused up conv, R1 through D's 6 convs";
  EXPECT_EQ(forward_ops["minibatch_stddev_backward"], 1);
  const auto gradients = append_backward(graph, built.loss);
  EXPECT_EQ(gradients.size(), graph.tensors_with_role(TensorRole::kParameter).size());
  int zero_filled = 0;
  for (const Node& node : graph.nodes()) zero_filled += node.op == "zero_fill" && node.backward;
  EXPECT_EQ(zero_filled, 2 * 2 + 2 * 2) << "ToRGB and FromRGB at lod 1 and 2: weight and bias each";
  int second_order = 0;
  for (const Node& node : graph.nodes()) second_order += node.op == "minibatch_stddev_backward_backward";
  EXPECT_EQ(second_order, 1);
  // G's and D's gradients in buckets of their own (two reductions).
  const MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(plan.parameter_bytes, plan.gradient_bytes);
}

}  // namespace
}  // namespace sb
