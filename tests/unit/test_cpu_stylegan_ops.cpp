// sb::cpu kernels of StyleGAN's ops: minibatch standard deviation with its backward and second backward
// (src/cpu/minibatch_stddev.h), the fixed blur (src/cpu/blur.h), the GAN losses (src/cpu/gan_losses.h) and the
// fused up/down-sampling weights (src/cpu/fused_conv_weight.h). Forward values against hand-computed numbers,
// every backward against central finite differences of a random projection, outputs NaN-poisoned first.
// Run: unit_tests --gtest_filter='CpuMinibatchStddev*:CpuBlur*:CpuGanLosses*:CpuFusedConvWeight*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/blur.h"
#include "src/cpu/fused_conv_weight.h"
#include "src/cpu/gan_losses.h"
#include "src/cpu/minibatch_stddev.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Hand-computed values are exact in double; the kernels round once to fp32.
constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-7;
// Central differences with eps 1e-3 of an fp32 loss: ~1e-4 noise per element; a wrong gradient is off by O(1).
constexpr double kGradientTolerance = 1e-2;

std::vector<double> as_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

cpu::MinibatchStddevGeometry stddev_geometry(int64_t n, int64_t h, int64_t w, int64_t c, int64_t group, int64_t splits) {
  cpu::MinibatchStddevGeometry g;
  g.batch = n, g.height = h, g.width = w, g.channels = c, g.group = group, g.splits = splits;
  return g;
}

TEST(CpuMinibatchStddev, AppendsTheMeanStandardDeviationOfEachGroup) {
  // Two members, two channels, one pixel: sigma = (1, 2) over the group, statistic 1.5.
  const std::vector<float> x = {1, 0, 3, 4};
  std::vector<float> y = test::poisoned(6);
  cpu::minibatch_stddev_forward(x.data(), y.data(), stddev_geometry(2, 1, 1, 2, 2, 1));
  const std::vector<double> want = {1, 0, 1.5, 3, 4, 1.5};
  const auto cmp = test::compare_close(y, want, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuMinibatchStddev, GroupsStrideThroughEachPartAsTheReferenceReshape) {
  const std::vector<float> x = {0, 10, 2, 14};
  std::vector<float> y = test::poisoned(8);
  // One part, groups of 2: member g of group m is sample g * 2 + m, so {0, 2} (sigma 1) and {1, 3} (sigma 2).
  cpu::minibatch_stddev_forward(x.data(), y.data(), stddev_geometry(4, 1, 1, 1, 2, 1));
  auto cmp = test::compare_close(y, {0, 1, 10, 2, 2, 1, 14, 2}, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
  // Two parts (two ranks' batches): {0, 1} (sigma 5) and {2, 3} (sigma 6).
  cpu::minibatch_stddev_forward(x.data(), y.data(), stddev_geometry(4, 1, 1, 1, 2, 2));
  cmp = test::compare_close(y, {0, 5, 10, 5, 2, 6, 14, 6}, 1e-6, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
  EXPECT_THROW(cpu::minibatch_stddev_forward(x.data(), y.data(), stddev_geometry(4, 1, 1, 1, 4, 2)), UsageError);
}

TEST(CpuMinibatchStddev, BackwardMatchesFiniteDifferences) {
  const auto g = stddev_geometry(8, 2, 3, 2, 4, 2);
  const size_t xs = size_t(g.batch * g.positions()), ys = size_t(g.batch * g.height * g.width * (g.channels + 1));
  std::vector<float> x = test::random_normal(xs, 21);
  const std::vector<float> projection = test::random_normal(ys, 22);
  std::vector<float> dx = test::poisoned(xs), y(ys);
  cpu::minibatch_stddev_backward(x.data(), projection.data(), dx.data(), g);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  const auto cmp = test::compare_with_finite_differences(x, [&] {
    cpu::minibatch_stddev_forward(x.data(), y.data(), g);
    return test::project(y, projection);
  }, dx);
  EXPECT_GT(cmp.analytic_norm, 0.1);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

// The R1 penalty differentiates the backward pass again: <u, backward(x, dy)> by x and by dy.
TEST(CpuMinibatchStddev, SecondBackwardMatchesFiniteDifferencesOfTheBackward) {
  const auto g = stddev_geometry(8, 2, 2, 3, 4, 1);
  const size_t xs = size_t(g.batch * g.positions()), ys = size_t(g.batch * g.height * g.width * (g.channels + 1));
  std::vector<float> x = test::random_normal(xs, 31);
  std::vector<float> dy = test::random_normal(ys, 32);
  const std::vector<float> u = test::random_normal(xs, 33);
  std::vector<float> dx2 = test::poisoned(xs), ddy = test::poisoned(ys), dx(xs);
  cpu::minibatch_stddev_backward_backward(x.data(), dy.data(), u.data(), dx2.data(), ddy.data(), g);
  EXPECT_EQ(test::count_unwritten(dx2), 0u);
  EXPECT_EQ(test::count_unwritten(ddy), 0u);
  auto loss = [&] {
    cpu::minibatch_stddev_backward(x.data(), dy.data(), dx.data(), g);
    return test::project(dx, u);
  };
  const auto by_x = test::compare_with_finite_differences(x, loss, dx2);
  EXPECT_GT(by_x.analytic_norm, 0.1);
  EXPECT_LE(by_x.relative_error, kGradientTolerance) << by_x.describe();
  const auto by_dy = test::compare_with_finite_differences(dy, loss, ddy);
  EXPECT_GT(by_dy.analytic_norm, 0.1);
  EXPECT_LE(by_dy.relative_error, kGradientTolerance) << by_dy.describe();
}

TEST(CpuBlur, SpreadsAnImpulseByTheOuterProductOfOneTwoOne) {
  std::vector<float> x(9 * 2, 0.0f);
  x[(1 * 3 + 1) * 2 + 0] = 1.0f;  // channel 0: centre impulse
  x[0 * 2 + 1] = 1.0f;            // channel 1: corner impulse (the padding drops the taps outside)
  std::vector<float> y = test::poisoned(18);
  cpu::blur2d(x.data(), y.data(), 1, 3, 3, 2);
  const std::vector<double> centre = {0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625};
  const std::vector<double> corner = {0.25, 0.125, 0, 0.125, 0.0625, 0, 0, 0, 0};
  std::vector<double> want(18);
  for (size_t p = 0; p < 9; ++p) want[p * 2] = centre[p], want[p * 2 + 1] = corner[p];
  const auto cmp = test::compare_close(y, want, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuBlur, IsSelfAdjoint) {
  const int64_t n = 2, h = 5, w = 4, c = 3;
  const size_t count = size_t(n * h * w * c);
  const std::vector<float> a = test::random_normal(count, 41), b = test::random_normal(count, 42);
  std::vector<float> blur_a(count), blur_b(count);
  cpu::blur2d(a.data(), blur_a.data(), n, h, w, c);
  cpu::blur2d(b.data(), blur_b.data(), n, h, w, c);
  EXPECT_GT(test::l2_norm(blur_a), 0.1);
  EXPECT_NEAR(test::project(blur_a, b), test::project(a, blur_b), 1e-5);
}

TEST(CpuGanLosses, SoftplusLossAndItsGradient) {
  const std::vector<float> scores = {0.0f, std::log(3.0f)};
  // sign -1: softplus(0) = ln 2, softplus(-ln 3) = ln(4/3), averaged.
  EXPECT_NEAR(cpu::softplus_loss_forward(scores.data(), 2, -1.0f), 0.5 * (std::log(2.0) + std::log(4.0 / 3.0)), 1e-7);
  std::vector<float> d = test::poisoned(2);
  cpu::softplus_loss_backward(scores.data(), d.data(), 2, -1.0f, 2.0f);  // weight 2 in a sum of losses
  const auto cmp = test::compare_close(d, {2 * -0.5 / 2, 2 * -0.25 / 2}, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
  // Large scores do not overflow.
  const std::vector<float> large = {200.0f, -200.0f};
  EXPECT_NEAR(cpu::softplus_loss_forward(large.data(), 2, 1.0f), 100.0, 1e-4);
}

TEST(CpuGanLosses, SoftplusGradientMatchesFiniteDifferences) {
  std::vector<float> scores = test::random_normal(6, 51, 2.0f);
  std::vector<float> d(6);
  cpu::softplus_loss_backward(scores.data(), d.data(), 6, 1.0f, 1.0f);
  const auto cmp = test::compare_with_finite_differences(
      scores, [&] { return double(cpu::softplus_loss_forward(scores.data(), 6, 1.0f)); }, d);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuGanLosses, SquaredNormLossIsAMeanOverSamples) {
  const std::vector<float> x = {1, 2, 3, 0};
  EXPECT_FLOAT_EQ(cpu::squared_norm_loss_forward(x.data(), 4, 2, 5.0f), 5.0f / 2 * 14);
  std::vector<float> d = test::poisoned(4);
  cpu::squared_norm_loss_backward(x.data(), d.data(), 4, 2, 5.0f, 1.0f);
  const auto cmp = test::compare_close(d, {5, 10, 15, 0}, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuFusedConvWeight, SumsTheFourShiftsOfThePaddedKernel) {
  const std::vector<float> ones(9, 1.0f);
  std::vector<float> w4 = test::poisoned(16);
  cpu::fused_conv_weight_forward(ones.data(), w4.data(), 1, 1, 1.0f);
  const std::vector<double> up = {1, 2, 2, 1, 2, 4, 4, 2, 2, 4, 4, 2, 1, 2, 2, 1};
  auto cmp = test::compare_close(w4, up, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
  cpu::fused_conv_weight_forward(ones.data(), w4.data(), 1, 1, 0.25f);
  std::vector<double> down = up;
  for (double& v : down) v *= 0.25;
  cmp = test::compare_close(w4, down, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuFusedConvWeight, BackwardMatchesFiniteDifferences) {
  const int64_t k = 3, c = 2;
  std::vector<float> w3 = test::random_normal(size_t(k * 9 * c), 61);
  const std::vector<float> projection = test::random_normal(size_t(k * 16 * c), 62);
  std::vector<float> w4(size_t(k * 16 * c)), dw3 = test::poisoned(size_t(k * 9 * c));
  cpu::fused_conv_weight_backward(projection.data(), dw3.data(), k, c, 0.25f);
  EXPECT_EQ(test::count_unwritten(dw3), 0u);
  const auto cmp = test::compare_with_finite_differences(w3, [&] {
    cpu::fused_conv_weight_forward(w3.data(), w4.data(), k, c, 0.25f);
    return test::project(w4, projection);
  }, dw3);
  EXPECT_GT(cmp.analytic_norm, 0.1);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

}  // namespace
}  // namespace sb
