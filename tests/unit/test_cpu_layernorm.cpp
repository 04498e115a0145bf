// sb::cpu::layernorm_forward/backward (src/cpu/layernorm.h): forward against a plain fp64 formula on fresh
// random rows with a non-zero mean, normalised rows of mean 0 and variance 1, and finite-difference checks of
// dx, dgamma and dbeta. Run: unit_tests --gtest_filter='CpuLayerNorm*'.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "src/cpu/layernorm.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
// fp32 storage of an fp64 result: a few ulps of O(1) values.
constexpr double kForwardAtol = 1e-5;
constexpr double kForwardRtol = 1e-5;
// eps 1e-3 on O(1) fp32 data leaves ~1e-4 noise in the numeric gradient; 1e-2 relative on the norm is ample.
constexpr double kGradientTolerance = 1e-2;

struct Shape {
  int64_t rows;
  int64_t cols;
};



// |got - ref| <= atol + rtol |ref| everywhere; the message names the worst element.
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& ref) {
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::fabs(got[i] - ref[i]) - (kForwardAtol + kForwardRtol * std::fabs(ref[i]));
    if (!(excess <= worst_excess)) {  // NaN counts as worst
      worst_excess = excess;
      worst = i;
    }
  }
  if (worst_excess <= 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << worst << ": got " << got[worst] << " want " << ref[worst];
}

struct LayerNormData {
  std::vector<float> x, gamma, beta;
};

// Rows with mean ~3 and std ~2, as residual sums are, and gamma/beta away from the identity.
LayerNormData make_data(const Shape& s, uint32_t seed) {
  LayerNormData d;
  d.x = test::random_normal(s.rows * s.cols, seed, 2.0f);
  for (float& v : d.x) v += 3.0f;
  d.gamma = test::random_uniform(s.cols, seed + 1, 0.5f, 1.5f);
  d.beta = test::random_normal(s.cols, seed + 2, 0.5f);
  return d;
}

TEST(CpuLayerNorm, ForwardMatchesDoubleFormula) {
  const Shape shapes[] = {{1, 7}, {5, 37}, {3, 129}, {2, 1024}};
  const float epsilons[] = {cpu::kFairseqLayerNormEpsilon, cpu::kBertLayerNormEpsilon};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    for (float epsilon : epsilons) {
      SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " eps " << epsilon);
      LayerNormData d = make_data(s, seed += 3);
      std::vector<float> y(s.rows * s.cols, kPoison), mean(s.rows, kPoison), rstd(s.rows, kPoison);
      cpu::layernorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), rstd.data(),
                             s.rows, s.cols, epsilon);
      ASSERT_EQ(test::count_non_finite(y) + test::count_non_finite(mean) + test::count_non_finite(rstd), 0u);

      std::vector<double> y_ref(y.size()), mean_ref(s.rows), rstd_ref(s.rows);
      for (int64_t r = 0; r < s.rows; ++r) {
        double sum = 0, sq = 0;
        for (int64_t c = 0; c < s.cols; ++c) sum += d.x[r * s.cols + c];
        mean_ref[r] = sum / s.cols;
        for (int64_t c = 0; c < s.cols; ++c) sq += std::pow(d.x[r * s.cols + c] - mean_ref[r], 2);
        rstd_ref[r] = 1.0 / std::sqrt(sq / s.cols + epsilon);
        for (int64_t c = 0; c < s.cols; ++c) {
          y_ref[r * s.cols + c] = (d.x[r * s.cols + c] - mean_ref[r]) * rstd_ref[r] * d.gamma[c] + d.beta[c];
        }
      }
      EXPECT_TRUE(all_close(y, y_ref));
      EXPECT_TRUE(all_close(mean, mean_ref));
      EXPECT_TRUE(all_close(rstd, rstd_ref));
      EXPECT_GT(test::l2_norm(d.x), 0);
      EXPECT_GT(test::l2_norm(y), 0);
    }
  }
}

TEST(CpuLayerNorm, NormalizedRowsHaveZeroMeanAndUnitVariance) {
  const Shape s{6, 301};
  LayerNormData d = make_data(s, 7);
  std::vector<float> y(s.rows * s.cols, kPoison), mean(s.rows, kPoison), rstd(s.rows, kPoison);
  cpu::layernorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), rstd.data(), s.rows,
                         s.cols, cpu::kFairseqLayerNormEpsilon);
  ASSERT_EQ(test::count_non_finite(y), 0u);
  for (int64_t r = 0; r < s.rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t c = 0; c < s.cols; ++c) {
      const double xhat = (y[r * s.cols + c] - d.beta[c]) / d.gamma[c];  // undo the affine part
      sum += xhat;
      sq += xhat * xhat;
    }
    const double row_mean = sum / s.cols;
    // var / (var + 1e-5) with var ~4 is 1 - 2.5e-6; the rest is fp32 rounding of y.
    EXPECT_NEAR(row_mean, 0.0, 1e-5) << "row " << r;
    EXPECT_NEAR(sq / s.cols - row_mean * row_mean, 1.0, 1e-4) << "row " << r;
  }
}

TEST(CpuLayerNorm, ConstantRowGivesBeta) {
  const Shape s{2, 17};
  LayerNormData d = make_data(s, 11);
  for (int64_t c = 0; c < s.cols; ++c) d.x[c] = 2.75f;  // variance exactly 0: rstd = 1/sqrt(eps), xhat = 0
  for (float epsilon : {cpu::kFairseqLayerNormEpsilon, cpu::kBertLayerNormEpsilon}) {
    std::vector<float> y(s.rows * s.cols, kPoison), mean(s.rows, kPoison), rstd(s.rows, kPoison);
    cpu::layernorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), rstd.data(), s.rows,
                           s.cols, epsilon);
    ASSERT_EQ(test::count_non_finite(y) + test::count_non_finite(rstd), 0u);
    for (int64_t c = 0; c < s.cols; ++c) EXPECT_EQ(y[c], d.beta[c]);
    EXPECT_FLOAT_EQ(rstd[0], static_cast<float>(1.0 / std::sqrt(static_cast<double>(epsilon))));
  }
}

TEST(CpuLayerNorm, GradientsMatchFiniteDifferences) {
  const Shape shapes[] = {{1, 5}, {4, 33}, {3, 64}};
  const float epsilons[] = {cpu::kFairseqLayerNormEpsilon, cpu::kBertLayerNormEpsilon};
  uint32_t seed = 300;
  for (const Shape& s : shapes) {
    for (float epsilon : epsilons) {
      SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " eps " << epsilon);
      LayerNormData d = make_data(s, seed += 5);
      const std::vector<float> w = test::random_normal(s.rows * s.cols, seed + 4);  // L = sum w * y, so dy = w
      std::vector<float> y(s.rows * s.cols), mean(s.rows), rstd(s.rows);
      auto loss = [&] {
        cpu::layernorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), rstd.data(),
                               s.rows, s.cols, epsilon);
        return test::project(y, w);
      };
      loss();
      std::vector<float> dx(d.x.size(), kPoison), dgamma(s.cols, kPoison), dbeta(s.cols, kPoison);
      cpu::layernorm_backward(w.data(), d.x.data(), d.gamma.data(), mean.data(), rstd.data(), dx.data(),
                              dgamma.data(), dbeta.data(), s.rows, s.cols);
      ASSERT_EQ(test::count_non_finite(dx) + test::count_non_finite(dgamma) + test::count_non_finite(dbeta), 0u);

      const auto check_dx = test::compare_with_finite_differences(d.x, loss, dx);
      EXPECT_LE(check_dx.relative_error, kGradientTolerance) << "dx: " << check_dx.describe();
      const auto check_dgamma = test::compare_with_finite_differences(d.gamma, loss, dgamma);
      EXPECT_LE(check_dgamma.relative_error, kGradientTolerance) << "dgamma: " << check_dgamma.describe();
      const auto check_dbeta = test::compare_with_finite_differences(d.beta, loss, dbeta);
      EXPECT_LE(check_dbeta.relative_error, kGradientTolerance) << "dbeta: " << check_dbeta.describe();
      EXPECT_GT(check_dx.analytic_norm, 0);

      // The parameter gradients also have a closed form, which holds far tighter than finite differences.
      std::vector<double> dgamma_ref(s.cols, 0.0), dbeta_ref(s.cols, 0.0);
      for (int64_t r = 0; r < s.rows; ++r) {
        for (int64_t c = 0; c < s.cols; ++c) {
          const double xhat = (d.x[r * s.cols + c] - static_cast<double>(mean[r])) * rstd[r];
          dgamma_ref[c] += w[r * s.cols + c] * xhat;
          dbeta_ref[c] += w[r * s.cols + c];
        }
      }
      EXPECT_TRUE(all_close(dgamma, dgamma_ref));
      EXPECT_TRUE(all_close(dbeta, dbeta_ref));
      EXPECT_GT(check_dgamma.analytic_norm, 0);
      EXPECT_GT(check_dbeta.analytic_norm, 0);
    }
  }
}

}  // namespace
}  // namespace sb
