// sb::cpu::softmax_cross_entropy_* against a naive double formula: plain NLL, fairseq's label smoothing
// written out as a target distribution, ignored rows, logits of +-80 and beyond, finite-difference gradients,
// a 32,768-class row and the fatal path for a bad target. Run: unit_tests --gtest_filter='CpuCrossEntropy*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cross_entropy.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/unit/cpu_loss_checks.h"

namespace sb {
namespace {

using test::expect_all_written;
using test::expect_close;
using test::poisoned;

// -sum_c q_c log p_c with p = exp(z) / sum exp(z) taken directly in double (exp(80) = 5.5e34 is no trouble
// for double) and q written out: 1 - eps on the target, eps / (V - 1) elsewhere (fairseq main).
double naive_row_loss(const float* z, int64_t classes, int32_t target, double eps) {
  double sum_exp = 0;
  for (int64_t c = 0; c < classes; ++c) sum_exp += std::exp(static_cast<double>(z[c]));
  double loss = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double q = c == target ? 1.0 - eps : eps / static_cast<double>(classes - 1);
    loss -= q * std::log(std::exp(static_cast<double>(z[c])) / sum_exp);
  }
  return loss;
}

struct Forward {
  std::vector<float> losses, logsumexp;
  float loss_sum = 0;
  int64_t counted = -1;
};

Forward run_forward(const std::vector<float>& logits, const std::vector<int32_t>& targets, int64_t classes,
                    float eps, int32_t ignore_index) {
  const int64_t rows = static_cast<int64_t>(targets.size());
  Forward out{poisoned<float>(rows), poisoned<float>(rows), std::nanf(""), -1};
  cpu::softmax_cross_entropy_forward(logits.data(), targets.data(), out.losses.data(), out.logsumexp.data(),
                                     &out.loss_sum, &out.counted, rows, classes, eps, ignore_index);
  expect_all_written(out.losses, "losses");
  expect_all_written(out.logsumexp, "saved_logsumexp");
  return out;
}

void check_against_naive(int64_t rows, int64_t classes, float eps, float stddev, uint32_t seed) {
  const auto logits = test::random_normal(rows * classes, seed, stddev);
  const auto targets = test::random_ids(rows, seed + 1, 0, static_cast<int32_t>(classes - 1));
  ASSERT_GT(test::l2_norm(logits), 0.0);
  const Forward out = run_forward(logits, targets, classes, eps, cpu::kNoIgnoreIndex);
  std::vector<double> ref(rows);
  double ref_sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    ref[r] = naive_row_loss(logits.data() + r * classes, classes, targets[r], eps);
    ref_sum += ref[r];
  }
  expect_close(out.losses, ref, "losses");
  EXPECT_NEAR(out.loss_sum, ref_sum, 1e-5 * std::fabs(ref_sum));
  EXPECT_EQ(out.counted, rows);
  EXPECT_GT(test::l2_norm(out.losses), 0.0);
}

TEST(CpuCrossEntropy, ZeroSmoothingIsPlainNll) { check_against_naive(9, 37, 0.0f, 3.0f, 11); }

TEST(CpuCrossEntropy, SmoothingMatchesHandWrittenTargetDistribution) { check_against_naive(9, 37, 0.1f, 3.0f, 12); }

// Pins the variant: fairseq main's (1 - eps - eps/(V-1)) nll + eps/(V-1) smooth, not the older
// (1 - eps) nll + eps/V smooth. At V = 5 the two differ by ~1e-2, far above fp32 rounding.
TEST(CpuCrossEntropy, SmoothingIsFairseqMainNotTheOlderEpsOverV) {
  const int64_t classes = 5;
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.5f};
  const std::vector<int32_t> targets = {1};
  const double eps = 0.1;
  const Forward out = run_forward(logits, targets, classes, static_cast<float>(eps), cpu::kNoIgnoreIndex);
  const double lse = std::log(std::exp(2.0) + std::exp(-1.0) + std::exp(0.5) + std::exp(3.0) + std::exp(-2.5));
  const double nll = lse - (-1.0);
  const double smooth = 5 * lse - (2.0 - 1.0 + 0.5 + 3.0 - 2.5);
  const double current = (1 - eps - eps / 4) * nll + eps / 4 * smooth;
  const double older = (1 - eps) * nll + eps / 5 * smooth;
  EXPECT_NEAR(out.losses[0], current, 1e-5);
  EXPECT_GT(std::fabs(current - older), 1e-2);
  EXPECT_NEAR(out.logsumexp[0], lse, 1e-5);
}

TEST(CpuCrossEntropy, IgnoredRowsContributeNothing) {
  const int64_t rows = 8, classes = 23;
  const int32_t pad = 1;  // fairseq's padding index is a real class id
  const auto logits = test::random_normal(rows * classes, 21, 2.0f);
  auto targets = test::random_ids(rows, 22, 2, classes - 1);
  targets[0] = targets[3] = targets[7] = pad;
  const Forward out = run_forward(logits, targets, classes, 0.1f, pad);
  EXPECT_EQ(out.counted, 5);
  double kept_sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == pad) {
      EXPECT_EQ(out.losses[r], 0.0f) << "row " << r;
    } else {
      EXPECT_NEAR(out.losses[r], naive_row_loss(logits.data() + r * classes, classes, targets[r], 0.1), 1e-4);
      kept_sum += out.losses[r];
    }
  }
  EXPECT_NEAR(out.loss_sum, kept_sum, 1e-5 * kept_sum);

  auto dlogits = poisoned<float>(rows * classes);
  cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), out.logsumexp.data(), dlogits.data(), rows,
                                      classes, 0.1f, pad, 1.0f / 5);
  expect_all_written(dlogits, "dlogits");
  for (int64_t r : {0, 3, 7}) {
    for (int64_t c = 0; c < classes; ++c) EXPECT_EQ(dlogits[r * classes + c], 0.0f) << r << "," << c;
  }
  EXPECT_GT(test::l2_norm(dlogits), 0.0);
}

TEST(CpuCrossEntropy, LargeLogitsStayFinite) {
  const int64_t rows = 6, classes = 31;
  auto logits = test::random_uniform(rows * classes, 31, -80.0f, 80.0f);
  logits[0] = 80.0f;
  logits[1] = -80.0f;
  for (int64_t c = 0; c < classes; ++c) logits[5 * classes + c] = 80.0f;  // a flat row: loss = log V exactly
  const auto targets = test::random_ids(rows, 32, 0, classes - 1);
  const Forward out = run_forward(logits, targets, classes, 0.1f, cpu::kNoIgnoreIndex);
  std::vector<double> ref(rows);
  for (int64_t r = 0; r < rows; ++r) ref[r] = naive_row_loss(logits.data() + r * classes, classes, targets[r], 0.1);
  expect_close(out.losses, ref, "losses at +-80", 1e-4, 1e-5);
  EXPECT_NEAR(out.losses[5], std::log(31.0), 1e-5);

  auto dlogits = poisoned<float>(rows * classes);
  cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), out.logsumexp.data(), dlogits.data(), rows,
                                      classes, 0.1f, cpu::kNoIgnoreIndex, 1.0f);
  expect_all_written(dlogits, "dlogits at +-80");

  // Beyond what exp() holds without the max subtraction: target logit 1000, the rest 0.
  std::vector<float> huge(classes, 0.0f);
  huge[4] = 1000.0f;
  const Forward far = run_forward(huge, {4}, classes, 0.0f, cpu::kNoIgnoreIndex);
  EXPECT_NEAR(far.losses[0], 0.0, 1e-6);
  EXPECT_NEAR(far.logsumexp[0], 1000.0, 1e-3);
}

TEST(CpuCrossEntropy, BackwardMatchesFiniteDifferences) {
  for (float eps : {0.0f, 0.1f}) {
    const int64_t rows = 6, classes = 17;
    const int32_t ignore = 0;
    auto logits = test::random_normal(rows * classes, 41, 2.0f);
    auto targets = test::random_ids(rows, 42, 1, classes - 1);
    targets[2] = ignore;
    const float scale = 1.0f / 5;
    const Forward out = run_forward(logits, targets, classes, eps, ignore);
    auto dlogits = poisoned<float>(rows * classes);
    cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), out.logsumexp.data(), dlogits.data(),
                                        rows, classes, eps, ignore, scale);
    expect_all_written(dlogits, "dlogits");
    // The scalar is scale * sum of row losses, each row loss summed in double from the kernel's output.
    auto loss = [&] {
      const Forward f = run_forward(logits, targets, classes, eps, ignore);
      double sum = 0;
      for (float l : f.losses) sum += l;
      return scale * sum;
    };
    const auto cmp = test::compare_with_finite_differences(logits, loss, dlogits, test::kGradientEps);
    EXPECT_LE(cmp.relative_error, test::kGradientRelativeError) << "eps " << eps << ": " << cmp.describe();
    EXPECT_GT(cmp.analytic_norm, 0.0);
  }
}

// One Transformer-Big-sized row: the per-row gradient sums to 0 (softmax and q both sum to 1) and the loss
// agrees with the naive formula over 32,768 classes.
TEST(CpuCrossEntropy, VocabularySizedRows) {
  const int64_t rows = 3, classes = 32768;
  const auto logits = test::random_normal(rows * classes, 51, 4.0f);
  const auto targets = test::random_ids(rows, 52, 0, classes - 1);
  const Forward out = run_forward(logits, targets, classes, 0.1f, cpu::kNoIgnoreIndex);
  auto dlogits = poisoned<float>(rows * classes);
  cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), out.logsumexp.data(), dlogits.data(), rows,
                                      classes, 0.1f, cpu::kNoIgnoreIndex, 1.0f);
  expect_all_written(dlogits, "dlogits");
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_NEAR(out.losses[r], naive_row_loss(logits.data() + r * classes, classes, targets[r], 0.1),
                1e-5 * out.losses[r]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += dlogits[r * classes + c];
    EXPECT_NEAR(sum, 0.0, 1e-5) << "row " << r;
  }
}

TEST(CpuCrossEntropy, TargetOutsideClassesIsFatal) {
  const std::vector<float> logits(2 * 4, 0.5f);
  const std::vector<int32_t> targets = {1, 4};  // 4 is not a class of 4 and not the ignore index
  EXPECT_EXIT(run_forward(logits, targets, 4, 0.0f, -100), ::testing::ExitedWithCode(kExitRuntime),
              "target 4 of row 1 is outside");
  std::vector<float> dlogits(8);
  const std::vector<float> lse(2, 1.0f);
  EXPECT_EXIT(cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), lse.data(), dlogits.data(), 2, 4,
                                                  0.0f, -100, 1.0f),
              ::testing::ExitedWithCode(kExitRuntime), "outside \\[0, 4\\)");
}

}  // namespace
}  // namespace sb
