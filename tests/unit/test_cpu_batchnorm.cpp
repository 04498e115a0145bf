// sb::cpu::batchnorm_* (src/cpu/batchnorm.h): a hand-computed channel (statistics, running-statistics update
// with the unbiased variance), the fused ReLU / LeakyReLU, and finite-difference checks of dx, dgamma and dbeta
// with and without the fused activation. Run: unit_tests --gtest_filter='CpuBatchNorm*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/cpu/batchnorm.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using Act = cpu::BatchNormActivation;

// fp32 storage of double results on O(1) values.
constexpr double kForwardTolerance = 1e-6;
// Central differences with eps 1e-3 on O(1) fp32 data: ~1e-4 noise; 1e-2 relative on the norm.
constexpr double kGradientTolerance = 1e-2;

TEST(CpuBatchNorm, OneChannelByHand) {
  const std::vector<float> x{1, 2, 3, 4};
  const float gamma = 2, beta = 0.5f;
  float y[4], mean = NAN, invstd = NAN, running_mean = 0, running_var = 1;
  cpu::batchnorm_forward(x.data(), &gamma, &beta, y, &mean, &invstd, &running_mean, &running_var, 4, 1, 1e-5f, 0.1f,
                         Act::kNone, 0.0f);
  EXPECT_FLOAT_EQ(mean, 2.5f);
  EXPECT_NEAR(invstd, 1.0 / std::sqrt(1.25 + 1e-5), kForwardTolerance);  // biased variance 1.25
  EXPECT_FLOAT_EQ(running_mean, 0.25f);                                   // 0.9 · 0 + 0.1 · 2.5
  EXPECT_NEAR(running_var, 0.9 + 0.1 * 5.0 / 3.0, kForwardTolerance);    // unbiased variance 5 / 3
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], (x[i] - 2.5) * invstd * 2 + 0.5, kForwardTolerance);
}

TEST(CpuBatchNorm, FusedActivationsApplyToTheNormalisedValue) {
  const std::vector<float> x{1, 2, 3, 4};
  const float gamma = 1, beta = 0;
  float plain[4], relu[4], leaky[4], mean, invstd, rm = 0, rv = 1;
  cpu::batchnorm_forward(x.data(), &gamma, &beta, plain, &mean, &invstd, &rm, &rv, 4, 1, 1e-5f, 0.1f, Act::kNone, 0);
  cpu::batchnorm_forward(x.data(), &gamma, &beta, relu, &mean, &invstd, &rm, &rv, 4, 1, 1e-5f, 0.1f, Act::kRelu, 0);
  cpu::batchnorm_forward(x.data(), &gamma, &beta, leaky, &mean, &invstd, &rm, &rv, 4, 1, 1e-5f, 0.1f, Act::kLeakyRelu,
                         0.1f);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(relu[i], plain[i] > 0 ? plain[i] : 0.0f);
    EXPECT_FLOAT_EQ(leaky[i], plain[i] > 0 ? plain[i] : 0.1f * plain[i]);
  }
  EXPECT_LT(plain[0], 0.0f);
}

struct Data {
  int64_t rows = 30, channels = 5;
  std::vector<float> x = test::random_normal(150, 21, 2.0f);
  std::vector<float> gamma = test::random_uniform(5, 22, 0.5f, 1.5f);
  std::vector<float> beta = test::random_normal(5, 23, 0.5f);
  std::vector<float> projection = test::random_normal(150, 24);
};

// L = Σ projection · y as a function of the data (fresh statistics every evaluation).
double projected_loss(const Data& d, Act act) {
  std::vector<float> y(d.x.size()), mean(5), invstd(5), rm(5, 0.0f), rv(5, 1.0f);
  cpu::batchnorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                         rv.data(), d.rows, d.channels, 1e-3f, 0.1f, act, 0.1f);
  return test::project(y, d.projection);
}

class CpuBatchNormGradients : public ::testing::TestWithParam<Act> {};

TEST_P(CpuBatchNormGradients, MatchFiniteDifferences) {
  Data d;
  for (float& v : d.x) v += 1.0f;  // a channel mean away from 0
  const Act act = GetParam();
  std::vector<float> y(d.x.size()), mean(5), invstd(5), rm(5, 0.0f), rv(5, 1.0f);
  cpu::batchnorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                         rv.data(), d.rows, d.channels, 1e-3f, 0.1f, act, 0.1f);
  std::vector<float> dx = test::poisoned(d.x.size()), dgamma = test::poisoned(5), dbeta = test::poisoned(5);
  cpu::batchnorm_backward(d.projection.data(), d.x.data(), y.data(), d.gamma.data(), mean.data(), invstd.data(),
                          dx.data(), dgamma.data(), dbeta.data(), d.rows, d.channels, act, 0.1f);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  auto loss = [&] { return projected_loss(d, act); };
  for (auto [name, values, analytic] : {std::tuple{"dx", &d.x, dx}, std::tuple{"dgamma", &d.gamma, dgamma},
                                        std::tuple{"dbeta", &d.beta, dbeta}}) {
    const auto cmp = test::compare_with_finite_differences(*values, loss, analytic);
    EXPECT_GT(cmp.analytic_norm, 0.0) << name;
    EXPECT_LE(cmp.relative_error, kGradientTolerance) << name << ": " << cmp.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, CpuBatchNormGradients,
                         ::testing::Values(Act::kNone, Act::kRelu, Act::kLeakyRelu));

}  // namespace
}  // namespace sb
