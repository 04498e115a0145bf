// sb::cpu::batchnorm_* (src/cpu/batchnorm.h): a hand-computed channel (statistics, running-statistics update
// with the unbiased variance), the fused ReLU / LeakyReLU, and finite-difference checks of dx, dgamma and dbeta
// with and without the fused activation and statistics groups, and groups equal to separate batchnorms on
// slices of the rows. Run: unit_tests --gtest_filter='CpuBatchNorm*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
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
  cpu::batchnorm_forward(x.data(), &gamma, &beta, y, &mean, &invstd, &running_mean, &running_var, 4, 1, 1, 1e-5f, 0.1f,
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
  cpu::batchnorm_forward(x.data(), &gamma, &beta, plain, &mean, &invstd, &rm, &rv, 4, 1, 1, 1e-5f, 0.1f, Act::kNone, 0);
  cpu::batchnorm_forward(x.data(), &gamma, &beta, relu, &mean, &invstd, &rm, &rv, 4, 1, 1, 1e-5f, 0.1f, Act::kRelu, 0);
  cpu::batchnorm_forward(x.data(), &gamma, &beta, leaky, &mean, &invstd, &rm, &rv, 4, 1, 1, 1e-5f, 0.1f,
                         Act::kLeakyRelu, 0.1f);
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
double projected_loss(const Data& d, Act act, int64_t groups) {
  const size_t stats = size_t(groups * d.channels);
  std::vector<float> y(d.x.size()), mean(stats), invstd(stats), rm(5, 0.0f), rv(5, 1.0f);
  cpu::batchnorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                         rv.data(), d.rows, d.channels, groups, 1e-3f, 0.1f, act, 0.1f);
  return test::project(y, d.projection);
}

// (activation, statistics groups): 3 groups of 10 rows, each normalised on its own.
class CpuBatchNormGradients : public ::testing::TestWithParam<std::tuple<Act, int64_t>> {};

TEST_P(CpuBatchNormGradients, MatchFiniteDifferences) {
  Data d;
  for (float& v : d.x) v += 1.0f;  // a channel mean away from 0
  const auto [act, groups] = GetParam();
  const size_t stats = size_t(groups * d.channels);
  std::vector<float> y(d.x.size()), mean(stats), invstd(stats), rm(5, 0.0f), rv(5, 1.0f);
  cpu::batchnorm_forward(d.x.data(), d.gamma.data(), d.beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                         rv.data(), d.rows, d.channels, groups, 1e-3f, 0.1f, act, 0.1f);
  std::vector<float> dx = test::poisoned(d.x.size()), dgamma = test::poisoned(5), dbeta = test::poisoned(5);
  cpu::batchnorm_backward(d.projection.data(), d.x.data(), y.data(), d.gamma.data(), mean.data(), invstd.data(),
                          dx.data(), dgamma.data(), dbeta.data(), d.rows, d.channels, groups, act, 0.1f);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  auto loss = [&, act = act, groups = groups] { return projected_loss(d, act, groups); };
  for (auto [name, values, analytic] : {std::tuple{"dx", &d.x, dx}, std::tuple{"dgamma", &d.gamma, dgamma},
                                        std::tuple{"dbeta", &d.beta, dbeta}}) {
    const auto cmp = test::compare_with_finite_differences(*values, loss, analytic);
    EXPECT_GT(cmp.analytic_norm, 0.0) << name;
    EXPECT_LE(cmp.relative_error, kGradientTolerance) << name << ": " << cmp.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(ActivationsAndGroups, CpuBatchNormGradients,
                         ::testing::Combine(::testing::Values(Act::kNone, Act::kRelu, Act::kLeakyRelu),
                                            ::testing::Values(int64_t{1}, int64_t{3})));

// dgamma and dbeta against the sum over the slices, each rounded to fp32 as one rank's would be: the sum
// itself in double, so only its final fp32 rounding (2^-24 relative) separates the two.
constexpr double kGroupSumTolerance = 1e-6;

// Statistics groups = separate batchnorms on contiguous slices of the rows (what that many data-parallel ranks
// compute): y, the saved statistics and dx bit for bit (the same loop on the same rows), dgamma and dbeta the
// sums of the slices', the running statistics those of slice 0 alone. The slices' means differ by 2 per slice,
// so one batchnorm over all the rows gives another y, and running statistics moved by every slice in turn
// would differ from slice 0's.
TEST(CpuBatchNorm, GroupsEqualSeparateBatchNormsOnTheSlices) {
  constexpr int64_t kGroups = 3, kSliceRows = 8, kChannels = 5, kRows = kGroups * kSliceRows;
  constexpr size_t kSlice = size_t(kSliceRows * kChannels), kAll = size_t(kRows * kChannels);
  std::vector<float> x = test::random_normal(kAll, 51, 1.5f);
  for (size_t i = 0; i < kAll; ++i) x[i] += 2.0f * float(i / kSlice);
  const std::vector<float> dy = test::random_normal(kAll, 52);
  const std::vector<float> gamma = test::random_uniform(kChannels, 53, 0.5f, 1.5f);
  const std::vector<float> beta = test::random_normal(kChannels, 54, 0.5f);
  const std::vector<float> running_mean(kChannels, 0.3f), running_var(kChannels, 1.7f);
  const Act act = Act::kLeakyRelu;

  std::vector<float> y = test::poisoned(kAll), mean = test::poisoned(kGroups * kChannels);
  std::vector<float> invstd = test::poisoned(kGroups * kChannels), rm = running_mean, rv = running_var;
  std::vector<float> dx = test::poisoned(kAll), dgamma = test::poisoned(kChannels), dbeta = test::poisoned(kChannels);
  cpu::batchnorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                         rv.data(), kRows, kChannels, kGroups, 1e-3f, 0.1f, act, 0.1f);
  cpu::batchnorm_backward(dy.data(), x.data(), y.data(), gamma.data(), mean.data(), invstd.data(), dx.data(),
                          dgamma.data(), dbeta.data(), kRows, kChannels, kGroups, act, 0.1f);
  for (const auto* out : {&y, &mean, &invstd, &dx, &dgamma, &dbeta}) ASSERT_EQ(test::count_unwritten(*out), 0u);

  std::vector<double> dgamma_sum(kChannels, 0.0), dbeta_sum(kChannels, 0.0);
  std::vector<float> first_rm, first_rv;
  for (int64_t g = 0; g < kGroups; ++g) {
    const auto slice = [&](const std::vector<float>& v, size_t size) {
      return std::vector<float>(v.begin() + g * size, v.begin() + (g + 1) * size);
    };
    const std::vector<float> xs = slice(x, kSlice), dys = slice(dy, kSlice);
    std::vector<float> ys(kSlice), means(kChannels), invstds(kChannels), rms = running_mean, rvs = running_var;
    std::vector<float> dxs(kSlice), dgammas(kChannels), dbetas(kChannels);
    cpu::batchnorm_forward(xs.data(), gamma.data(), beta.data(), ys.data(), means.data(), invstds.data(), rms.data(),
                           rvs.data(), kSliceRows, kChannels, 1, 1e-3f, 0.1f, act, 0.1f);
    cpu::batchnorm_backward(dys.data(), xs.data(), ys.data(), gamma.data(), means.data(), invstds.data(), dxs.data(),
                            dgammas.data(), dbetas.data(), kSliceRows, kChannels, 1, act, 0.1f);
    EXPECT_EQ(slice(y, kSlice), ys) << "group " << g;
    EXPECT_EQ(slice(mean, kChannels), means) << "group " << g;
    EXPECT_EQ(slice(invstd, kChannels), invstds) << "group " << g;
    EXPECT_EQ(slice(dx, kSlice), dxs) << "group " << g;
    for (int64_t c = 0; c < kChannels; ++c) dgamma_sum[c] += dgammas[c], dbeta_sum[c] += dbetas[c];
    if (g == 0) first_rm = rms, first_rv = rvs;
  }
  const auto dgamma_cmp = test::compare_close(dgamma, dgamma_sum, 0.0, kGroupSumTolerance);
  EXPECT_TRUE(dgamma_cmp.ok()) << dgamma_cmp.description;
  const auto dbeta_cmp = test::compare_close(dbeta, dbeta_sum, 0.0, kGroupSumTolerance);
  EXPECT_TRUE(dbeta_cmp.ok()) << dbeta_cmp.description;
  EXPECT_GT(test::l2_norm(dgamma), 0.0);
  EXPECT_EQ(rm, first_rm) << "running statistics: group 0's";
  EXPECT_EQ(rv, first_rv);
  EXPECT_NE(rm, running_mean) << "running statistics not updated";

  std::vector<float> y_whole(kAll), mean_whole(kChannels), invstd_whole(kChannels), rm_whole = running_mean,
      rv_whole = running_var;
  cpu::batchnorm_forward(x.data(), gamma.data(), beta.data(), y_whole.data(), mean_whole.data(), invstd_whole.data(),
                         rm_whole.data(), rv_whole.data(), kRows, kChannels, 1, 1e-3f, 0.1f, act, 0.1f);
  double diff = 0;
  for (size_t i = 0; i < kAll; ++i) diff += std::fabs(double(y_whole[i]) - y[i]);
  EXPECT_GT(diff / kAll, 0.1) << "the groups made no difference: the test would pass without them";
}

TEST(CpuBatchNorm, GroupsThatDoNotDivideTheRowsAreFatal) {
  const std::vector<float> x = test::random_normal(10, 61);
  const float gamma = 1, beta = 0;
  std::vector<float> y(10), mean(10), invstd(10);
  float rm = 0, rv = 1;
  EXPECT_EXIT(cpu::batchnorm_forward(x.data(), &gamma, &beta, y.data(), mean.data(), invstd.data(), &rm, &rv, 10, 1,
                                     3, 1e-5f, 0.1f, Act::kNone, 0),
              ::testing::ExitedWithCode(kExitRuntime), "the groups must divide the rows");
  EXPECT_EXIT(cpu::batchnorm_backward(x.data(), x.data(), x.data(), &gamma, mean.data(), invstd.data(), y.data(), &rm,
                                      &rv, 10, 1, 10, Act::kNone, 0),
              ::testing::ExitedWithCode(kExitRuntime), "rows >= 2 per group");  // no unbiased variance
}

}  // namespace
}  // namespace sb
