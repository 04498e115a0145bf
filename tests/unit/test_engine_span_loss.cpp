// The SQuAD head as graph ops on the CPU executor: hidden (batch, seq, hidden) -> Linear(hidden -> 2) ->
// select_column 0 / 1 -> span_loss. The loss matches sb::cpu::span_loss_forward on the same logits and HF's
// formula written out in double; every parameter's gradient (through the span loss, both column selects and
// the summed logits gradient) matches central finite differences of the whole graph's loss.
// Run: unit_tests --gtest_filter='EngineSpanLoss*:CpuSelectColumn*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/cpu/select_column.h"
#include "src/cpu/span_loss.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"

namespace sb {
namespace {

using test::expect_all_written;
using test::poisoned;

constexpr int64_t kBatch = 5, kSeq = 7, kHidden = 3;

// Labels HF has to fix up beside ordinary ones: past the end (ignored), exactly seq (ignored), negative
// (clamped to position 0).
const std::vector<int32_t> kStarts = {2, 400, 0, -3, 6};
const std::vector<int32_t> kEnds = {4, 401, static_cast<int32_t>(kSeq), 1, 6};

struct SquadHead {
  Graph graph;
  TensorId hidden, weight, bias, logits, start_positions, end_positions, loss;
  std::map<TensorId, TensorId> gradients;

  SquadHead() {
    GraphBuilder b(graph);
    // The hidden states are a parameter here so that the logits' gradient is checked element by element too.
    hidden = b.parameter("hidden", {kBatch, kSeq, kHidden});
    weight = b.parameter("qa_outputs.weight", {2, kHidden});
    bias = b.parameter("qa_outputs.bias", {2});
    start_positions = b.input("start_positions", {kBatch}, DType::kInt32);
    end_positions = b.input("end_positions", {kBatch}, DType::kInt32);
    logits = b.linear(hidden, weight, bias);  // (batch, seq, 2)
    loss = b.span_loss(b.select_column(logits, 0), b.select_column(logits, 1), start_positions, end_positions);
    gradients = append_backward(graph, loss);
  }
};

// HF's loss for one side in double: mean over kept rows of logsumexp - z[clamp(position)].
double naive_side_loss(const std::vector<double>& logits, const std::vector<int32_t>& positions) {
  double sum = 0;
  int kept = 0;
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t p = std::clamp<int64_t>(positions[b], 0, kSeq);
    if (p == kSeq) continue;
    double sum_exp = 0;
    for (int64_t s = 0; s < kSeq; ++s) sum_exp += std::exp(logits[b * kSeq + s]);
    sum += std::log(sum_exp) - logits[b * kSeq + p];
    ++kept;
  }
  return kept > 0 ? sum / kept : 0.0;
}

class EngineSpanLoss : public ::testing::Test {
 protected:
  EngineSpanLoss() : plan_(plan_memory(head_.graph)), executor_(head_.graph, plan_) {
    uint32_t seed = 20;
    for (TensorId p : {head_.hidden, head_.weight, head_.bias}) {
      values_[p] = test::random_normal(static_cast<size_t>(head_.graph.tensor(p).elements()), seed++, 1.5f);
    }
    std::copy(kStarts.begin(), kStarts.end(), executor_.i32(head_.start_positions));
    std::copy(kEnds.begin(), kEnds.end(), executor_.i32(head_.end_positions));
  }

  void upload() {
    for (const auto& [p, v] : values_) std::copy(v.begin(), v.end(), executor_.f32(p));
  }
  double forward_loss() {
    upload();
    executor_.run_nodes(0, executor_.forward_node_count());
    return *executor_.f32(head_.loss);
  }

  SquadHead head_;
  MemoryPlan plan_;
  CpuExecutor executor_;
  std::map<TensorId, std::vector<float>> values_;
};

TEST_F(EngineSpanLoss, ForwardMatchesTheCpuReferenceAndHfFormula) {
  // The logits the graph computed, copied before the planner lets later nodes reuse their memory, and split by
  // hand into the two sides.
  upload();
  size_t producer = 0;
  while (head_.graph.nodes()[producer].outputs[0] != head_.logits) ++producer;
  executor_.run_nodes(0, producer + 1);
  const std::vector<float> logits(executor_.f32(head_.logits), executor_.f32(head_.logits) + kBatch * kSeq * 2);
  executor_.run_nodes(producer + 1, executor_.forward_node_count());
  const float loss = *executor_.f32(head_.loss);
  std::vector<float> start(kBatch * kSeq), end(kBatch * kSeq);
  std::vector<double> start_d(start.size()), end_d(end.size());
  for (int64_t r = 0; r < kBatch * kSeq; ++r) {
    start[r] = logits[2 * r];
    end[r] = logits[2 * r + 1];
    start_d[r] = start[r];
    end_d[r] = end[r];
  }
  auto rows = poisoned<float>(2 * kBatch), lse = poisoned<float>(2 * kBatch);
  float reference = std::nanf("");
  cpu::span_loss_forward(start.data(), end.data(), kStarts.data(), kEnds.data(), rows.data(), lse.data(), &reference,
                         kBatch, kSeq);
  EXPECT_EQ(loss, reference);  // the same kernel on the same floats
  const double hf = (naive_side_loss(start_d, kStarts) + naive_side_loss(end_d, kEnds)) / 2;
  EXPECT_NEAR(loss, hf, 1e-5 * hf);
  EXPECT_GT(loss, 0.5f);
  // The saved log-sum-exp the backward node reads is the reference's.
  const TensorId saved = head_.graph.nodes()[executor_.forward_node_count() - 1].outputs[1];
  const std::vector<float> graph_lse(executor_.f32(saved), executor_.f32(saved) + 2 * kBatch);
  expect_all_written(graph_lse, "span_logsumexp");
  EXPECT_EQ(graph_lse, lse);
}

TEST_F(EngineSpanLoss, GradientsMatchFiniteDifferencesOfTheGraph) {
  upload();
  executor_.run();
  int add_n = 0;
  for (const Node& node : head_.graph.nodes()) add_n += node.op == "add_n";
  EXPECT_EQ(add_n, 1) << "the two columns' gradients are summed into the logits' gradient";
  // Adding a constant to every start (or end) logit leaves the softmax as it is: the bias gets no gradient.
  const float* dbias = executor_.f32(head_.gradients.at(head_.bias));
  EXPECT_NEAR(dbias[0], 0.0f, 1e-6);  // softmax rows sum to 1 up to rounding
  EXPECT_NEAR(dbias[1], 0.0f, 1e-6);
  for (TensorId p : {head_.hidden, head_.weight}) {
    const TensorInfo& info = head_.graph.tensor(p);
    const float* g = executor_.f32(head_.gradients.at(p));
    const std::vector<float> analytic(g, g + info.elements());
    expect_all_written(analytic, info.name);
    const auto cmp = test::compare_with_finite_differences(values_[p], [&] { return forward_loss(); }, analytic,
                                                           test::kGradientEps);
    EXPECT_LE(cmp.relative_error, test::kGradientRelativeError) << info.name << ": " << cmp.describe();
    EXPECT_GT(cmp.analytic_norm, 0.0) << info.name;
  }
  // Row 1 is ignored on both sides: its hidden states get no gradient.
  const float* dhidden = executor_.f32(head_.gradients.at(head_.hidden));
  for (int64_t i = 0; i < kSeq * kHidden; ++i) EXPECT_EQ(dhidden[kSeq * kHidden + i], 0.0f) << i;
}

TEST(EngineSpanLossShapes, BuilderRefusesMismatchedOperands) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId logits = b.input("logits", {4, 6, 2});
  const TensorId positions = b.input("positions", {4}, DType::kInt32);
  const TensorId start = b.select_column(logits, 0);
  EXPECT_EQ(graph.tensor(start).shape, (std::vector<int64_t>{4, 6}));
  EXPECT_THROW(b.select_column(logits, 2), UsageError);
  EXPECT_THROW(b.select_column(logits, -1), UsageError);
  EXPECT_THROW(b.span_loss(start, logits, positions, positions), UsageError);                // (4, 6, 2)
  EXPECT_THROW(b.span_loss(start, start, b.input("f", {4}), positions), UsageError);          // float labels
  EXPECT_THROW(b.span_loss(start, start, positions, b.input("p5", {5}, DType::kInt32)), UsageError);
  EXPECT_NO_THROW(b.span_loss(start, b.select_column(logits, 1), positions, positions));
}

// The kernels alone: a copy of one column, and its gradient with zeros in the other columns.
TEST(CpuSelectColumn, ForwardAndBackwardAreExact) {
  const int64_t rows = 9, cols = 3;
  const std::vector<float> x = test::random_normal(rows * cols, 31);
  const std::vector<float> dy = test::random_normal(rows, 32);
  for (int64_t column = 0; column < cols; ++column) {
    auto y = poisoned<float>(rows);
    cpu::select_column_forward(x.data(), y.data(), rows, cols, column);
    auto dx = poisoned<float>(rows * cols);
    cpu::select_column_backward(dy.data(), dx.data(), rows, cols, column);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(y[r], x[r * cols + column]) << r;
      for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(dx[r * cols + c], c == column ? dy[r] : 0.0f) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace sb
