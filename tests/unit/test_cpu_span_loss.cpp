// sb::cpu::span_loss_* against HF BertForQuestionAnswering's loss written out in double: labels clamped to
// [0, seq], ignore_index = seq, (mean CE(start) + mean CE(end)) / 2, plus finite-difference gradients.
// Run: unit_tests --gtest_filter='CpuSpanLoss*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/cpu/span_loss.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"

namespace sb {
namespace {

using test::expect_all_written;
using test::poisoned;

// HF's loss for one side: mean over rows with clamp(position, 0, seq) != seq of -log softmax(logits)[position];
// 0 when no row is kept (where PyTorch gives NaN; span_loss.h documents the difference).
double naive_side_loss(const std::vector<float>& logits, const std::vector<int32_t>& positions, int64_t seq) {
  double sum = 0;
  int64_t kept = 0;
  for (size_t b = 0; b < positions.size(); ++b) {
    const int64_t p = std::clamp<int64_t>(positions[b], 0, seq);
    if (p == seq) continue;
    const float* z = logits.data() + b * seq;
    double sum_exp = 0;
    for (int64_t s = 0; s < seq; ++s) sum_exp += std::exp(static_cast<double>(z[s]));
    sum += std::log(sum_exp) - z[p];
    ++kept;
  }
  return kept > 0 ? sum / kept : 0.0;
}

struct SpanCase {
  int64_t batch = 6, seq = 24;
  std::vector<float> start_logits, end_logits;
  std::vector<int32_t> start_positions, end_positions;

  explicit SpanCase(uint32_t seed) {
    start_logits = test::random_normal(batch * seq, seed, 2.0f);
    end_logits = test::random_normal(batch * seq, seed + 1, 2.0f);
    start_positions = test::random_ids(batch, seed + 2, 0, static_cast<int32_t>(seq - 1));
    end_positions = test::random_ids(batch, seed + 3, 0, static_cast<int32_t>(seq - 1));
    // The labels HF has to fix up: past the end (ignored), at seq exactly (ignored), negative (clamped to 0).
    start_positions[1] = 400;
    end_positions[1] = 401;
    end_positions[2] = static_cast<int32_t>(seq);
    start_positions[4] = -1;
  }

  float forward(std::vector<float>* saved = nullptr, std::vector<float>* row_losses = nullptr) const {
    auto rows = poisoned<float>(2 * batch);
    auto lse = poisoned<float>(2 * batch);
    float loss = std::nanf("");
    cpu::span_loss_forward(start_logits.data(), end_logits.data(), start_positions.data(), end_positions.data(),
                           rows.data(), lse.data(), &loss, batch, seq);
    if (saved) *saved = lse;
    if (row_losses) *row_losses = rows;
    return loss;
  }
};

TEST(CpuSpanLoss, ForwardMatchesHfFormula) {
  const SpanCase c(61);
  std::vector<float> saved, rows;
  const float loss = c.forward(&saved, &rows);
  expect_all_written(saved, "saved_logsumexp");
  expect_all_written(rows, "row_losses");
  const double ref = (naive_side_loss(c.start_logits, c.start_positions, c.seq) +
                      naive_side_loss(c.end_logits, c.end_positions, c.seq)) / 2;
  EXPECT_NEAR(loss, ref, 1e-5 * ref);
  EXPECT_GT(loss, 0.0f);
  // Row 1 is ignored on both sides, row 2 on the end side; row 4's start label -1 counts as position 0.
  EXPECT_EQ(rows[1], 0.0f);
  EXPECT_EQ(rows[c.batch + 1], 0.0f);
  EXPECT_EQ(rows[c.batch + 2], 0.0f);
  EXPECT_GT(rows[4], 0.0f);
}

TEST(CpuSpanLoss, BackwardMatchesFiniteDifferences) {
  SpanCase c(71);
  std::vector<float> saved;
  c.forward(&saved);
  auto dstart = poisoned<float>(c.batch * c.seq);
  auto dend = poisoned<float>(c.batch * c.seq);
  const float dloss = 1.5f;  // not 1, so a dropped upstream factor shows
  cpu::span_loss_backward(c.start_logits.data(), c.end_logits.data(), c.start_positions.data(),
                          c.end_positions.data(), saved.data(), dstart.data(), dend.data(), c.batch, c.seq, dloss);
  expect_all_written(dstart, "dstart_logits");
  expect_all_written(dend, "dend_logits");
  auto loss = [&] { return static_cast<double>(dloss) * c.forward(); };
  const auto start_cmp = test::compare_with_finite_differences(c.start_logits, loss, dstart, test::kGradientEps);
  EXPECT_LE(start_cmp.relative_error, test::kGradientRelativeError) << "start: " << start_cmp.describe();
  const auto end_cmp = test::compare_with_finite_differences(c.end_logits, loss, dend, test::kGradientEps);
  EXPECT_LE(end_cmp.relative_error, test::kGradientRelativeError) << "end: " << end_cmp.describe();
  EXPECT_GT(test::l2_norm(dstart), 0.0);
  EXPECT_GT(test::l2_norm(dend), 0.0);
  for (int64_t s = 0; s < c.seq; ++s) {
    EXPECT_EQ(dstart[1 * c.seq + s], 0.0f);  // ignored rows get no gradient
    EXPECT_EQ(dend[2 * c.seq + s], 0.0f);
  }
}

// Every end label past the sequence: the end mean is taken as 0, the loss is half the start mean and the end
// logits get a zero gradient rather than NaN.
TEST(CpuSpanLoss, SideWithNoKeptRowContributesNothing) {
  SpanCase c(81);
  std::fill(c.end_positions.begin(), c.end_positions.end(), static_cast<int32_t>(c.seq + 3));
  std::vector<float> saved;
  const float loss = c.forward(&saved);
  EXPECT_NEAR(loss, naive_side_loss(c.start_logits, c.start_positions, c.seq) / 2, 1e-5);
  auto dstart = poisoned<float>(c.batch * c.seq);
  auto dend = poisoned<float>(c.batch * c.seq);
  cpu::span_loss_backward(c.start_logits.data(), c.end_logits.data(), c.start_positions.data(),
                          c.end_positions.data(), saved.data(), dstart.data(), dend.data(), c.batch, c.seq, 1.0f);
  expect_all_written(dend, "dend_logits");
  EXPECT_EQ(test::l2_norm(dend), 0.0);
  EXPECT_GT(test::l2_norm(dstart), 0.0);
}

}  // namespace
}  // namespace sb
