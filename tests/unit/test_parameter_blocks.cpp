// zero3's parameters at 1/N in the plan: the graph pass that gives the backward nodes parameter copies of their own
// (a cast of a parameter computed again from the copy), and the parameter blocks the planner places by liveness:
// each unit's forward block alive from where its gather may be issued to its last forward reader, its backward block
// likewise for the copies, the unit gathered last kept (its copies in its forward block), nothing live at the same
// time sharing a byte.
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/planner.h"
#include "src/core/backward_parameter_copies.h"
#include "tests/unit/chain_graph.h"

namespace sb {
namespace {

using test::add_tensor;
using test::Chain;

// Mixed precision: the weight cast in the forward pass and read again by the backward GEMM. The pass gives the
// backward GEMM a cast of its own, of the weight's backward copy, just before it; the forward nodes are unchanged.
TEST(BackwardParameterCopies, ABackwardReaderOfAWeightCastCastsTheBackwardCopy) {
  Graph graph;
  const TensorId x = add_tensor(graph, "x", {4, 8}, TensorRole::kInput, kNoTensor, DType::kBFloat16);
  const TensorId w = add_tensor(graph, "w", {8, 8}, TensorRole::kParameter);
  const TensorId dw = add_tensor(graph, "dw", {8, 8}, TensorRole::kGradient, w);
  const TensorId g = add_tensor(graph, "gain", {8}, TensorRole::kParameter);
  const TensorId dg = add_tensor(graph, "dgain", {8}, TensorRole::kGradient, g);
  const TensorId w16 = add_tensor(graph, "w_bf16", {8, 8}, TensorRole::kActivation, kNoTensor, DType::kBFloat16);
  const TensorId y = add_tensor(graph, "y", {4, 8}, TensorRole::kActivation, kNoTensor, DType::kBFloat16);
  const TensorId dy = add_tensor(graph, "dy", {4, 8}, TensorRole::kActivation, kNoTensor, DType::kBFloat16);
  const TensorId dx = add_tensor(graph, "dx", {4, 8}, TensorRole::kActivation, kNoTensor, DType::kBFloat16);
  graph.add_node(Node{"cast", {w}, {w16}, {{"n", 64}}, false});
  graph.add_node(Node{"gemm", {x, w16}, {y}, {}, false});
  graph.add_node(Node{"scale", {y, g}, {dy}, {}, true});  // reads the gain, a parameter itself
  graph.add_node(Node{"gemm", {x, dy}, {dw}, {}, true});
  graph.add_node(Node{"gemm", {dy, w16}, {dx}, {}, true});
  graph.add_node(Node{"grad", {dy}, {dg}, {}, true});
  const std::vector<Node> before = graph.nodes();
  EXPECT_EQ(give_backward_its_own_parameter_copies(graph), 2u) << "w (through its cast) and the gain";
  const std::vector<Node>& nodes = graph.nodes();
  ASSERT_EQ(nodes.size(), 7u);
  for (size_t n = 0; n < 2; ++n) EXPECT_EQ(nodes[n].inputs, before[n].inputs) << "forward node " << n;
  const TensorId g_copy = nodes[2].inputs[1];
  EXPECT_EQ(graph.tensor(g_copy).parameter_copy_of, g);
  EXPECT_EQ(graph.tensor(g_copy).role, TensorRole::kActivation);
  EXPECT_EQ(nodes[3].op, "gemm");
  EXPECT_EQ(nodes[3].outputs[0], dw) << "the weight gradient reads no parameter: unchanged, not moved";
  ASSERT_EQ(nodes[4].op, "cast") << "inserted just before the backward GEMM that reads the cast";
  EXPECT_TRUE(nodes[4].backward);
  EXPECT_EQ(nodes[4].attributes, before[0].attributes);
  const TensorId w_copy = nodes[4].inputs[0];
  EXPECT_EQ(graph.tensor(w_copy).parameter_copy_of, w);
  EXPECT_EQ(graph.tensor(w_copy).dtype, DType::kFloat32);
  const TensorId w16_copy = nodes[4].outputs[0];
  EXPECT_EQ(graph.tensor(w16_copy).dtype, DType::kBFloat16);
  EXPECT_EQ(graph.tensor(w16_copy).parameter_copy_of, kNoTensor) << "an activation computed from the copy";
  EXPECT_EQ(nodes[5].inputs, (std::vector<TensorId>{dy, w16_copy}));
  for (const Node& node : nodes) {
    if (!node.backward) continue;
    for (TensorId id : node.inputs) {
      EXPECT_NE(graph.tensor(id).role, TensorRole::kParameter) << node.op;
      EXPECT_NE(id, w16) << node.op;
    }
  }
  EXPECT_THROW(plan_memory(graph), UsageError) << "copies are placed by parameter blocks alone";
}

struct Span {
  uint64_t begin, end;
  int first, last;
};

// Nothing live at the same time shares a byte: parameter blocks, gradient blocks and activations.
void expect_apart(const std::vector<Span>& spans) {
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const bool together = spans[i].first <= spans[j].last && spans[j].first <= spans[i].last;
      const bool overlap = spans[i].begin < spans[j].end && spans[j].begin < spans[i].end;
      ASSERT_FALSE(together && overlap) << "spans " << i << " and " << j;
    }
  }
}

// Twelve layers, two weights per bucket (six units). Forward: unit u = bucket 5 - u is needed at node 2u, its gather
// issued at the previous unit's node (the first at the training pass's start) and alive to its last forward reader;
// bucket 0 is gathered last and kept into the backward pass (its copies in its forward block). Backward: buckets 1..5
// are gathered again before their first weight gradient, each issued at the node that needs the one before.
TEST(ParameterBlocks, UnitsLiveFromTheirGathersIssueToTheirLastReader) {
  Chain chain(12);
  EXPECT_EQ(give_backward_its_own_parameter_copies(chain.graph), 12u);
  PlanOptions options{2048, 256, 2};
  options.shard_by_bucket = true;
  options.gradient_blocks = true;
  options.parameter_blocks = true;
  const MemoryPlan plan = plan_memory(chain.graph, options);
  ASSERT_TRUE(plan.parameters_in_blocks);
  ASSERT_EQ(plan.buckets.size(), 6u);
  ASSERT_EQ(plan.parameter_blocks.size(), 11u) << "six forward blocks, five backward";
  EXPECT_EQ(plan.offsets[chain.graph.tensors_with_role(TensorRole::kInput).front()], 0u)
      << "no parameter region, no gradient region: the optimizer's state (none here) and the inputs first";
  for (size_t b = 0; b < 6; ++b) {
    const ParameterBlock& forward = plan.parameter_blocks[b];
    EXPECT_FALSE(forward.backward);
    EXPECT_EQ(forward.first_bucket, b);
    EXPECT_EQ(forward.bytes, 2048u);
    const int unit = 5 - static_cast<int>(b);  // bucket 5 holds w0 and w1, read first
    EXPECT_EQ(forward.first_node, unit == 0 ? 0 : 2 * unit - 2) << "bucket " << b;
    // Backward node of layer i: weight_grad at 13 + 2 (11 - i), input_grad right after.
    EXPECT_EQ(forward.last_node, b == 0 ? 16 : 2 * unit + 1) << "bucket " << b;
    EXPECT_EQ(plan.buckets[b].forward_parameters_offset, forward.offset);
  }
  for (size_t b = 1; b < 6; ++b) {
    const ParameterBlock& backward = plan.parameter_blocks[5 + b];
    EXPECT_TRUE(backward.backward);
    EXPECT_EQ(backward.first_bucket, b);
    const int needed = 13 + 4 * static_cast<int>(b);  // the weight gradient of w(11 - 2b)
    EXPECT_EQ(backward.first_node, b == 1 ? 10 : needed - 4) << "one unit ahead";
    EXPECT_EQ(backward.last_node, needed + 3) << "the second weight's input gradient";
    EXPECT_EQ(plan.buckets[b].backward_parameters_offset, backward.offset);
  }
  EXPECT_EQ(plan.buckets[0].backward_parameters_offset, plan.buckets[0].forward_parameters_offset) << "kept";
  const MemoryPlan flat = [&] {
    Chain plain(12);
    PlanOptions whole = options;
    whole.parameter_blocks = false;
    return plan_memory(plain.graph, whole);
  }();
  std::vector<Span> spans;
  for (size_t i = 0; i < 12; ++i) {
    const TensorId w = chain.weights[i];
    const size_t b = (11 - i) / 2;
    const uint64_t relative = flat.offsets[w] - (flat.buckets[b].offset - flat.gradient_region_offset);
    EXPECT_EQ(plan.offsets[w], plan.buckets[b].forward_parameters_offset + relative) << "w" << i;
    TensorId copy = kNoTensor;
    for (size_t id = 0; id < chain.graph.tensors().size(); ++id) {
      if (chain.graph.tensors()[id].parameter_copy_of == w) copy = static_cast<TensorId>(id);
    }
    ASSERT_NE(copy, kNoTensor);
    EXPECT_EQ(plan.offsets[copy], plan.buckets[b].backward_parameters_offset + relative) << "w" << i;
  }
  for (const ParameterBlock& block : plan.parameter_blocks) {
    spans.push_back({block.offset, block.offset + block.bytes, block.first_node, block.last_node});
  }
  for (const GradientBlock& block : plan.gradient_blocks) {
    spans.push_back({block.offset, block.offset + block.bytes, block.first_node, block.released_after_node});
  }
  for (TensorId a : chain.activations) {
    spans.push_back({plan.offsets[a], plan.offsets[a] + chain.graph.tensor(a).bytes(), plan.first_use[a],
                     plan.last_use[a]});
  }
  expect_apart(spans);
  const PlanCategories c = plan_categories(chain.graph, plan);
  EXPECT_LT(c.parameters, flat.parameter_bytes) << "a few units gathered at the peak, not every parameter";
  EXPECT_GT(c.parameters, 0u);
  EXPECT_EQ(c.parameters + c.gradients + c.optimizer_state + c.running_state + c.inputs + c.activations + c.workspace +
                c.padding,
            plan.total_bytes);
  options.gradient_blocks = false;
  EXPECT_THROW(plan_memory(chain.graph, options), UsageError) << "parameter blocks need gradient blocks";
}

}  // namespace
}  // namespace sb
