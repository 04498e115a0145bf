// The engine end to end on the CPU device: a tiny transformer-like graph (tied embedding, layernorm, MLP
// with GELU, residual, causal masked attention, label-smoothed cross-entropy with padding,
// multi-head split and merge, scaled embedding plus learned positions, dropout) is built, differentiated, planned
// and run; every parameter's gradient is checked against central finite
// differences of the whole loss, and plain SGD on one repeated batch makes the loss fall.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

constexpr int64_t kBatch = 2, kTime = 5, kDim = 8, kHidden = 12, kVocab = 11, kHeads = 2;
constexpr int32_t kPad = 0;

struct TinyModel {
  Graph graph;
  TensorId ids, targets, lengths, loss;
  std::vector<TensorId> parameters;
  std::map<TensorId, TensorId> gradients;

  TinyModel() {
    GraphBuilder b(graph);
    ids = b.input("ids", {kBatch, kTime}, DType::kInt32);
    targets = b.input("targets", {kBatch * kTime}, DType::kInt32);
    lengths = b.input("lengths", {kBatch}, DType::kInt32);
    const TensorId table = b.parameter("embed", {kVocab, kDim});
    const TensorId g0 = b.parameter("ln0.g", {kDim}), b0 = b.parameter("ln0.b", {kDim});
    const TensorId w1 = b.parameter("fc1.w", {kHidden, kDim}), c1 = b.parameter("fc1.b", {kHidden});
    const TensorId w2 = b.parameter("fc2.w", {kDim, kHidden}), c2 = b.parameter("fc2.b", {kDim});
    const TensorId wq = b.parameter("q.w", {kDim, kDim}), wk = b.parameter("k.w", {kDim, kDim});
    const TensorId positions = b.parameter("positions", {kTime, kDim});
    parameters = {table, g0, b0, w1, c1, w2, c2, wq, wk, positions};

    TensorId x = b.scale(b.embedding(ids, table, kPad), 1.5);            // (B, T, D)
    x = b.layernorm(b.add_broadcast(x, positions), g0, b0, 1e-5);
    TensorId h = b.dropout(b.gelu(b.linear(x, w1, c1)), 0.2);             // (B, T, H)
    x = b.add(x, b.linear(h, w2, c2));                                    // residual
    auto heads = [&](TensorId t) {  // (B, T, D) -> (B, heads, T, D / heads)
      return b.swap_middle(b.reshape(t, {kBatch, kTime, kHeads, kDim / kHeads}));
    };
    TensorId q = heads(b.linear(x, wq)), k = heads(b.linear(x, wk)), v = heads(x);
    TensorId p = b.dropout(
        b.masked_softmax(b.matmul(q, k, false, true), 1.0 / std::sqrt(double(kDim / kHeads)), lengths, true), 0.1);
    TensorId context = b.reshape(b.swap_middle(b.matmul(p, v, false, false)), {kBatch, kTime, kDim});
    TensorId logits = b.linear(b.tanh(b.add(x, context)), table);         // tied output projection
    loss = b.softmax_cross_entropy(b.reshape(logits, {kBatch * kTime, kVocab}), targets, 0.1, kPad);
    gradients = append_backward(graph, loss);
  }
};

void fill_inputs(CpuExecutor& e, const TinyModel& m) {
  std::mt19937 random(3);
  int32_t* ids = e.i32(m.ids);
  int32_t* targets = e.i32(m.targets);
  const int32_t lengths[kBatch] = {5, 3};
  for (int64_t b = 0; b < kBatch; ++b) {
    e.i32(m.lengths)[b] = lengths[b];
    for (int64_t t = 0; t < kTime; ++t) {
      const bool real = t < lengths[b];
      ids[b * kTime + t] = real ? 1 + static_cast<int32_t>(random() % (kVocab - 1)) : kPad;
      targets[b * kTime + t] = real ? 1 + static_cast<int32_t>(random() % (kVocab - 1)) : kPad;
    }
  }
  uint32_t seed = 10;
  for (TensorId p : m.parameters) {
    const TensorInfo& info = m.graph.tensor(p);
    const bool gain = info.name.size() > 2 && info.name.substr(info.name.size() - 2) == ".g";
    std::vector<float> values = test::random_normal(static_cast<size_t>(info.elements()), seed++, gain ? 0.1f : 0.5f);
    for (size_t i = 0; i < values.size(); ++i) e.f32(p)[i] = gain ? 1.0f + values[i] : values[i];
  }
}

TEST(EngineAutodiff, EveryParameterGetsAGradientTiedEmbeddingSummed) {
  TinyModel m;
  EXPECT_EQ(m.gradients.size(), m.parameters.size());
  int add_n = 0;
  for (const Node& node : m.graph.nodes()) add_n += node.op == "add_n";
  EXPECT_GE(add_n, 1) << "the tied embedding and the residual branches need summed gradients";
  MemoryPlan plan = plan_memory(m.graph, PlanOptions{256, 64});
  EXPECT_EQ(plan.gradient_order.size(), m.parameters.size());
  EXPECT_GE(plan.buckets.size(), 2u);
  // The tied table is used first in the forward pass and last in the backward: its gradient is the last.
  EXPECT_EQ(m.graph.tensor(plan.gradient_order.back()).gradient_of, m.parameters[0]);
}

TEST(EngineAutodiff, GradientsMatchFiniteDifferencesOfTheWholeLoss) {
  TinyModel m;
  MemoryPlan plan = plan_memory(m.graph);
  CpuExecutor e(m.graph, plan);
  fill_inputs(e, m);
  e.run();
  const float loss = *e.f32(m.loss);
  ASSERT_TRUE(std::isfinite(loss));
  ASSERT_GT(loss, 0.5f);
  const size_t forward = e.forward_node_count();
  std::mt19937 random(5);
  for (TensorId p : m.parameters) {
    const TensorInfo& info = m.graph.tensor(p);
    std::vector<float> analytic(static_cast<size_t>(info.elements()));
    std::copy_n(e.f32(m.gradients.at(p)), analytic.size(), analytic.begin());
    double diff_sq = 0, num_sq = 0, ana_sq = 0;
    for (int sample = 0; sample < 12; ++sample) {
      const size_t i = random() % analytic.size();
      const float saved = e.f32(p)[i];
      const double eps = 2e-3;
      e.f32(p)[i] = static_cast<float>(saved + eps);
      e.run_nodes(0, forward);
      const double up = *e.f32(m.loss);
      e.f32(p)[i] = static_cast<float>(saved - eps);
      e.run_nodes(0, forward);
      const double down = *e.f32(m.loss);
      e.f32(p)[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      diff_sq += (numeric - analytic[i]) * (numeric - analytic[i]);
      num_sq += numeric * numeric;
      ana_sq += double(analytic[i]) * analytic[i];
    }
    const double scale = std::sqrt(std::max(num_sq, ana_sq));
    ASSERT_GT(scale, 1e-6) << info.name << ": sampled gradient is zero";
    EXPECT_LT(std::sqrt(diff_sq) / scale, 3e-2) << info.name << ": numeric norm " << std::sqrt(num_sq)
                                                << " analytic norm " << std::sqrt(ana_sq);
  }
}

TEST(EngineAutodiff, SgdOnARepeatedBatchLowersTheLoss) {
  TinyModel m;
  MemoryPlan plan = plan_memory(m.graph);
  CpuExecutor e(m.graph, plan);
  fill_inputs(e, m);
  e.run();
  const float first = *e.f32(m.loss);
  for (int step = 0; step < 30; ++step) {
    for (TensorId p : m.parameters) {
      const int64_t n = m.graph.tensor(p).elements();
      const float* g = e.f32(m.gradients.at(p));
      for (int64_t i = 0; i < n; ++i) e.f32(p)[i] -= 0.5f * g[i];
    }
    e.run();
  }
  const float last = *e.f32(m.loss);
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.7f * first) << "first " << first << " last " << last;
}

TEST(EngineAutodiff, RefusesALossThatIsNotALossOpAndUnusedParameters) {
  Graph graph;
  GraphBuilder b(graph);
  TensorId x = b.input("x", {2, 3});
  TensorId w = b.parameter("w", {4, 3});
  TensorId y = b.linear(x, w);
  EXPECT_THROW(append_backward(graph, y), UsageError);

  Graph unused;
  GraphBuilder u(unused);
  TensorId logits = u.linear(u.input("x", {2, 3}), u.parameter("w", {4, 3}));
  u.parameter("orphan", {5});
  TensorId loss = u.softmax_cross_entropy(logits, u.input("t", {2}, DType::kInt32), 0.0, -100);
  EXPECT_THROW(append_backward(unused, loss), UsageError);
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// Which elements a dropout keeps, read off its output (the input is random normal: never 0, so an output of
// 0 means dropped). The engine stores no mask; the backward pass draws the same one again.
TEST(EngineDropout, MasksRepeatWithinAStepAndChangeAcrossSteps) {
  Graph graph;
  GraphBuilder b(graph);
  TensorId x = b.input("x", {64, 16});
  TensorId w = b.parameter("w", {16, 16});
  TensorId h = b.linear(x, w);
  TensorId first = b.dropout(h, 0.5);
  TensorId second = b.dropout(h, 0.5);
  TensorId loss = b.softmax_cross_entropy(b.add(first, second), b.input("t", {64}, DType::kInt32), 0.0, -1);
  append_backward(graph, loss);
  graph.tensor(first).read_after_step = true;  // read after the step: the planner must not reuse their memory
  graph.tensor(second).read_after_step = true;
  MemoryPlan plan = plan_memory(graph);
  CpuExecutor e(graph, plan);
  std::vector<float> data = test::random_normal(64 * 16, 1);
  std::copy(data.begin(), data.end(), e.f32(x));
  std::copy_n(test::random_normal(256, 2).begin(), 256, e.f32(w));
  for (int i = 0; i < 64; ++i) e.i32(graph.find_tensor("t"))[i] = i % 16;
  auto kept = [&](TensorId out) {
    std::vector<uint8_t> pattern(64 * 16);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = e.f32(out)[i] != 0.0f;
    return pattern;
  };
  auto run_and_copy = [&](uint64_t seed, uint64_t step) {
    e.set_random_stream(seed, step);
    e.run();
    return kept(first);
  };
  const auto step0 = run_and_copy(7, 0);
  EXPECT_GT(std::count(step0.begin(), step0.end(), 1), 400);  // about half of 1024 kept
  EXPECT_LT(std::count(step0.begin(), step0.end(), 1), 624);
  EXPECT_EQ(step0, run_and_copy(7, 0));
  EXPECT_NE(step0, run_and_copy(7, 1));
  EXPECT_NE(step0, run_and_copy(8, 0));
  // The two dropout nodes own different ranges of the stream: their masks differ in one step.
  e.set_random_stream(7, 0);
  e.run();
  EXPECT_NE(kept(first), kept(second));
}

// The backward pass drops exactly what the forward pass dropped: the gradient reaching h through a dropout
// is 0 where the forward output was 0 and scaled by 1 / (1 - p) elsewhere.
TEST(EngineDropout, BackwardRedrawsTheForwardMask) {
  Graph graph;
  GraphBuilder b(graph);
  TensorId x = b.input("x", {32, 8});
  TensorId w = b.parameter("w", {8, 8});
  TensorId h = b.linear(x, w);
  TensorId dropped = b.dropout(h, 0.3);
  TensorId loss = b.softmax_cross_entropy(dropped, b.input("t", {32}, DType::kInt32), 0.0, -1);
  append_backward(graph, loss);
  for (const Node& node : graph.nodes()) {  // everything this test reads after the step stays where it is
    for (TensorId out : node.outputs) graph.tensor(out).read_after_step = true;
  }
  MemoryPlan plan = plan_memory(graph);
  CpuExecutor e(graph, plan);
  std::copy_n(test::random_normal(256, 3).begin(), 256, e.f32(x));
  std::copy_n(test::random_normal(64, 4).begin(), 64, e.f32(w));
  for (int i = 0; i < 32; ++i) e.i32(graph.find_tensor("t"))[i] = i % 8;
  e.set_random_stream(3, 5);
  e.run();
  TensorId dh = kNoTensor, ddropped = kNoTensor;  // the dropout node of the backward pass: ddropped -> dh
  for (const Node& node : graph.nodes()) {
    if (node.backward && node.op == "dropout") ddropped = node.inputs[0], dh = node.outputs[0];
  }
  ASSERT_NE(dh, kNoTensor);
  int zeros = 0;
  for (int i = 0; i < 256; ++i) {
    const float forward = e.f32(dropped)[i], gradient = e.f32(dh)[i], upstream = e.f32(ddropped)[i];
    if (forward == 0.0f) {
      EXPECT_EQ(gradient, 0.0f) << i;
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(gradient, upstream / 0.7f) << i;
    }
  }
  EXPECT_GT(zeros, 30);
}

}  // namespace
}  // namespace sb
