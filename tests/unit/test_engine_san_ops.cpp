// The SAN answer-module ops, stack and unused parameters through the graph on the CPU device: each op's
// node gives exactly what its sb::cpu kernel gives on the same data (the executor binds the right tensors
// and sizes), and the whole graph's gradients (autodiff's rule, the backward node's binding, the sums of
// tensors used twice) match central finite differences of a cross-entropy loss over the op's output.
// Run: unit_tests --gtest_filter='EngineSan*:EngineStack*:EngineUnused*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/cpu/random_uniform.h"
#include "src/cpu/san.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

// The shared op-graph fixture (tests/unit/engine_op_graph.h) with this file's seeds.
struct OpGraph : test::OpGraph {
  OpGraph() { seed = 300; }
};

// Row 0 keeps everything, row 1 is right-padded, row 2 keeps one middle segment (mt-dnn's premise mask).
std::vector<uint8_t> segment_mask(int64_t length) {
  std::vector<uint8_t> mask(3 * length, 0);
  for (int64_t l = length - 2; l < length; ++l) mask[length + l] = 1;
  for (int64_t l = 0; l < length; ++l) mask[2 * length + l] = l < 2 || l == length - 1;
  return mask;
}

TEST(EngineSan, GruCellMatchesTheKernelAndFiniteDifferences) {
  const int64_t batch = 3, in = 4, hidden = 5;
  OpGraph g;
  const TensorId x = g.parameter("x", {batch, in}), h = g.parameter("h", {batch, hidden});
  const TensorId w_ih = g.parameter("w_ih", {3 * hidden, in}, 0.5f);
  const TensorId w_hh = g.parameter("w_hh", {3 * hidden, hidden}, 0.5f);
  const TensorId b_ih = g.parameter("b_ih", {3 * hidden}, 0.5f), b_hh = g.parameter("b_hh", {3 * hidden}, 0.5f);
  const TensorId out = g.b.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh);
  // h' is a tanh/convex mix of O(1) values: scaled so that the cross-entropy is not flat.
  g.finish(g.b.scale(out, 3.0), {out});
  g.e->run();
  std::vector<float> ref(batch * hidden), gates(batch * 4 * hidden);
  cpu::gru_cell_forward(g.values(x).data(), g.values(h).data(), g.values(w_ih).data(), g.values(w_hh).data(),
                        g.values(b_ih).data(), g.values(b_hh).data(), ref.data(), gates.data(), batch, in, hidden);
  EXPECT_EQ(g.read(out), ref);
  EXPECT_GT(test::l2_norm(ref), 0.0);
  g.expect_gradients_match();
}

TEST(EngineSan, SelfAttentionMatchesTheKernelAndFiniteDifferences) {
  const int64_t batch = 3, length = 6, hidden = 5;
  OpGraph g;
  const TensorId memory = g.parameter("memory", {batch, length, hidden});
  const TensorId mask = g.mask("mask", batch, length, segment_mask(length));
  const TensorId weight = g.parameter("weight", {1, hidden}), bias = g.parameter("bias", {1});
  const TensorId out = g.b.san_self_attention(memory, mask, weight, bias);
  g.finish(out);
  g.e->run();
  std::vector<float> ref(batch * hidden), alpha(batch * length);
  cpu::san_self_attention_forward(g.values(memory).data(), segment_mask(length).data(), g.values(weight).data(),
                                  g.values(bias).data(), ref.data(), alpha.data(), batch, length, hidden);
  EXPECT_EQ(g.read(out), ref);
  EXPECT_GT(test::l2_norm(ref), 0.0);
  // softmax ignores a shift shared by every position
  g.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphStep, {bias});
}

TEST(EngineSan, BilinearAttentionWithSeparateKeysAndValues) {
  const int64_t batch = 3, length = 6, hm = 5, hs = 4;  // Hm != Hs: a transposed weight cannot pass
  OpGraph g;
  const TensorId keys = g.parameter("keys", {batch, length, hm}), values = g.parameter("values", {batch, length, hm});
  const TensorId state = g.parameter("state", {batch, hs});
  const TensorId mask = g.mask("mask", batch, length, segment_mask(length));
  const TensorId weight = g.parameter("weight", {hm, hs}, 0.6f), bias = g.parameter("bias", {hm}, 0.5f);
  const TensorId out = g.b.san_bilinear_attention(keys, values, state, mask, weight, bias);
  g.finish(out);
  g.e->run();
  std::vector<float> ref(batch * hm), projection(batch * hm), alpha(batch * length);
  cpu::san_bilinear_attention_forward(g.values(keys).data(), g.values(values).data(), g.values(state).data(),
                                      segment_mask(length).data(), g.values(weight).data(), g.values(bias).data(),
                                      ref.data(), projection.data(), alpha.data(), batch, length, hm, hs);
  EXPECT_EQ(g.read(out), ref);
  EXPECT_GT(test::l2_norm(ref), 0.0);
  g.expect_gradients_match();
}

// One tensor as keys and values (SAN without memory dropout): its two gradients are summed by autodiff.
TEST(EngineSan, BilinearAttentionWithKeysEqualToValues) {
  const int64_t batch = 3, length = 6, hm = 5, hs = 4;
  OpGraph g;
  const TensorId memory = g.parameter("memory", {batch, length, hm});
  const TensorId state = g.parameter("state", {batch, hs});
  const TensorId mask = g.mask("mask", batch, length, segment_mask(length));
  const TensorId weight = g.parameter("weight", {hm, hs}, 0.6f), bias = g.parameter("bias", {hm}, 0.5f);
  g.finish(g.b.san_bilinear_attention(memory, memory, state, mask, weight, bias));
  int sums = 0;
  for (const Node& node : g.graph.nodes()) sums += node.op == "add_n";
  EXPECT_EQ(sums, 1) << "dkeys + dvalues of the shared memory";
  g.expect_gradients_match();
}

TEST(EngineSan, MergeMatchesTheKernelAndFiniteDifferences) {
  const int64_t batch = 3, hidden = 4;
  OpGraph g;
  const TensorId x = g.parameter("x", {batch, hidden}), s = g.parameter("s", {batch, hidden});
  const TensorId out = g.b.san_merge(x, s);
  g.finish(out);
  g.e->run();
  std::vector<float> ref(batch * 4 * hidden);
  cpu::san_merge_forward(g.values(x).data(), g.values(s).data(), ref.data(), batch, hidden);
  EXPECT_EQ(g.read(out), ref);
  g.expect_gradients_match();
}

// The turn mask node draws its uniforms from the step's Philox stream: the same step replays them, the next
// step draws new ones; the average of the five turns matches the kernel and its gradient the differences.
TEST(EngineSan, TurnMaskFromThePhiloxStreamAndTurnAverage) {
  const int64_t turns = 5, batch = 3, classes = 4;
  OpGraph g;
  const TensorId logits = g.parameter("turn_logits", {turns, batch, classes}, 1.5f);
  const TensorId mask = g.b.san_turn_mask(batch, turns, 0.4);  // drops often enough to show in 3 rows
  const TensorId scores = g.b.san_turn_average(logits, mask);
  const Node mask_node = g.graph.nodes()[0];
  ASSERT_EQ(mask_node.op, "san_turn_mask");
  const TensorId uniforms = mask_node.outputs[0];
  g.finish(scores, {mask, uniforms});

  g.e->set_random_stream(17, 4);
  g.e->run();
  std::vector<float> ref_uniforms(batch * (turns + 1)), ref_mask(batch * turns);
  cpu::philox_uniform(ref_uniforms.data(), batch * (turns + 1), 17, g.e->dropout_offset(mask_node));
  cpu::san_turn_mask(ref_uniforms.data(), ref_mask.data(), batch, turns, 0.4f);
  EXPECT_EQ(g.read(uniforms), ref_uniforms);
  EXPECT_EQ(g.read(mask), ref_mask);
  int dropped = 0;
  for (float m : ref_mask) dropped += m == 0.0f;
  EXPECT_GT(dropped, 0);
  std::vector<float> ref_scores(batch * classes), probs(turns * batch * classes);
  cpu::san_turn_average_forward(g.values(logits).data(), ref_mask.data(), ref_scores.data(), probs.data(), turns,
                                batch, classes);
  EXPECT_EQ(g.read(scores), ref_scores);

  g.e->run();
  EXPECT_EQ(g.read(mask), ref_mask) << "the same step replays its mask";
  g.e->set_random_stream(17, 5);
  g.e->run();
  EXPECT_NE(g.read(uniforms), ref_uniforms) << "the next step draws new uniforms";
  g.expect_gradients_match();
}

TEST(EngineStack, StacksInOrderAndSplitsTheGradient) {
  const int64_t batch = 2, classes = 3;
  OpGraph g;
  std::vector<TensorId> parts;
  for (int i = 0; i < 3; ++i) parts.push_back(g.parameter("part" + std::to_string(i), {batch, classes}));
  const TensorId stacked = g.b.stack({parts[0], parts[1], parts[2], parts[1]});  // a part used twice
  EXPECT_EQ(g.graph.tensor(stacked).shape, (std::vector<int64_t>{4, batch, classes}));
  g.finish(stacked);
  g.e->run();
  std::vector<float> ref;
  for (int i : {0, 1, 2, 1}) ref.insert(ref.end(), g.values(parts[i]).begin(), g.values(parts[i]).end());
  EXPECT_EQ(g.read(stacked), ref);
  g.expect_gradients_match();
  EXPECT_THROW(g.b.stack({parts[0], g.b.parameter("other", {classes, batch})}), UsageError);
}

TEST(EngineSan, BuilderRefusesWrongShapesAndTypes) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId memory = b.parameter("memory", {2, 5, 4});
  const TensorId float_mask = b.input("float_mask", {2, 5});
  const TensorId mask = b.input("mask", {2, 5}, DType::kUInt8);
  const TensorId weight = b.parameter("w", {1, 4}), bias = b.parameter("b", {1});
  EXPECT_THROW(b.san_self_attention(memory, float_mask, weight, bias), UsageError);
  EXPECT_THROW(b.san_self_attention(memory, mask, b.parameter("w5", {1, 5}), bias), UsageError);
  // The kernels are fp32 only: a bf16 operand is cast (once) and the outputs are fp32.
  const TensorId bf16_memory = b.input("bf16", {2, 5, 4}, DType::kBFloat16);
  const TensorId summary = b.san_self_attention(bf16_memory, mask, weight, bias);
  EXPECT_EQ(graph.tensor(summary).dtype, DType::kFloat32);
  const Node& node = graph.nodes().back();
  ASSERT_EQ(node.op, "san_self_attention");
  EXPECT_EQ(graph.tensor(node.inputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(graph.nodes()[graph.nodes().size() - 2].op, "cast");
  b.san_self_attention(bf16_memory, mask, weight, bias);
  EXPECT_EQ(graph.nodes()[graph.nodes().size() - 2].op, "san_self_attention") << "the cast is reused";
  const TensorId state = b.parameter("state", {2, 3});
  EXPECT_THROW(b.san_bilinear_attention(memory, memory, state, mask, b.parameter("wt", {3, 4}), b.parameter("bb", {4})),
               UsageError) << "weight is (Hm, Hs)";
  EXPECT_THROW(b.gru_cell(state, state, b.parameter("wi", {9, 3}), b.parameter("wh", {9, 2}), b.parameter("bi", {9}),
                          b.parameter("bh", {9})),
               UsageError);
  EXPECT_THROW(b.san_turn_mask(2, 5, 1.0), UsageError);
  EXPECT_THROW(b.san_turn_average(b.parameter("logits", {5, 2, 3}), b.san_turn_mask(2, 4, 0.1)), UsageError);
}

// Composite ops count their products in matmul_flops; backward nodes twice the forward's.
TEST(EngineSan, MatmulFlopsCountTheProductsInsideTheOps) {
  const int64_t batch = 2, in = 3, hidden = 4;
  OpGraph g;
  const TensorId out = g.b.gru_cell(g.parameter("x", {batch, in}), g.parameter("h", {batch, hidden}),
                                    g.parameter("w_ih", {3 * hidden, in}), g.parameter("w_hh", {3 * hidden, hidden}),
                                    g.parameter("b_ih", {3 * hidden}), g.parameter("b_hh", {3 * hidden}));
  g.finish(out);
  const double gru = 2.0 * batch * 3 * hidden * (in + hidden);
  EXPECT_EQ(matmul_flops(g.graph, false), gru);
  EXPECT_EQ(matmul_flops(g.graph, true), 3 * gru);
}

TEST(EngineUnused, DeclaredUnusedParametersGetAZeroGradientFirst) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {3, 4});
  const TensorId w = b.parameter("w", {5, 4});
  const TensorId other_head = b.parameter("other_head.weight", {2, 4});
  const TensorId pooler = b.parameter("pooler.weight", {4, 4});
  b.declare_unused_parameter(other_head);
  b.declare_unused_parameter(pooler);
  b.tanh(b.linear(x, pooler));  // computed, as mt-dnn computes BERT's pooler, but not on the loss's path
  const TensorId loss = b.softmax_cross_entropy(b.linear(x, w), b.input("t", {3}, DType::kInt32), 0.0, -1);
  const auto gradients = append_backward(graph, loss);
  ASSERT_EQ(gradients.size(), 3u);
  const size_t forward = [&] {
    size_t n = 0;
    while (!graph.nodes()[n].backward) ++n;
    return n;
  }();
  EXPECT_EQ(graph.nodes()[forward].op, "zero_fill");
  EXPECT_EQ(graph.nodes()[forward + 1].op, "zero_fill");
  const MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(graph.tensor(plan.gradient_order.front()).gradient_of, other_head) << "ready first";
  CpuExecutor e(graph, plan);
  const auto values = test::random_normal(100, 5);
  for (TensorId id : {x, w, other_head, pooler}) std::memcpy(e.f32(id), values.data(), graph.tensor(id).bytes());
  for (int i = 0; i < 3; ++i) e.i32(graph.find_tensor("t"))[i] = i;
  for (TensorId p : {other_head, pooler}) {
    std::fill_n(e.f32(gradients.at(p)), graph.tensor(p).elements(), std::nanf(""));
  }
  e.run();
  for (TensorId p : {other_head, pooler}) {
    for (int64_t i = 0; i < graph.tensor(p).elements(); ++i) ASSERT_EQ(e.f32(gradients.at(p))[i], 0.0f);
  }
  double norm = 0;
  for (int64_t i = 0; i < 20; ++i) norm += std::fabs(e.f32(gradients.at(w))[i]);
  EXPECT_GT(norm, 0.0);
}

TEST(EngineUnused, RefusesAParameterDeclaredUnusedThatTheLossUses) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId w = b.parameter("w", {5, 4});
  b.declare_unused_parameter(w);
  const TensorId loss = b.softmax_cross_entropy(b.linear(b.input("x", {3, 4}), w), b.input("t", {3}, DType::kInt32),
                                                0.0, -1);
  EXPECT_THROW(append_backward(graph, loss), UsageError);
  EXPECT_THROW(b.declare_unused_parameter(b.input("not_a_parameter", {2})), UsageError);
}

}  // namespace
}  // namespace sb
