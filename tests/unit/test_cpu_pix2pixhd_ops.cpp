// sb::cpu kernels of the GAN ops added for pix2pixHD: instance normalisation (src/cpu/instance_norm.h), the
// transposed convolution (src/cpu/conv_transpose2d.h), reflection padding (src/cpu/reflection_pad.h) and the mean
// losses (src/cpu/pixel_losses.h). Forward values against hand-computed ones (worked out in the comments),
// backward passes against central finite differences of a random projection, every output written (NaN poison).
// Run: unit_tests --gtest_filter='CpuInstanceNorm*:CpuConvTranspose2d*:CpuReflectionPad*:CpuPixelLosses*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/conv_transpose2d.h"
#include "src/cpu/instance_norm.h"
#include "src/cpu/pixel_losses.h"
#include "src/cpu/reflection_pad.h"
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

// ---------------------------------------------------------------- instance norm

// One sample, 2 x 2 pixels, 2 channels (NHWC), epsilon 1. Channel 0 = 1, 2, 3, 4: mean 2.5, biased variance 1.25,
// invstd 1 / sqrt(2.25) = 2/3, y = -1, -1/3, 1/3, 1. Channel 1 = 2, 2, 2, 6: mean 3, variance 3, invstd 1/2,
// y = -0.5, -0.5, -0.5, 1.5.
TEST(CpuInstanceNorm, ForwardMatchesHandComputedValues) {
  const std::vector<float> x{1, 2, 2, 2, 3, 2, 4, 6};
  std::vector<float> y = test::poisoned(8), mean = test::poisoned(2), invstd = test::poisoned(2);
  cpu::instance_norm_forward(x.data(), y.data(), mean.data(), invstd.data(), 1, 4, 2, 1.0f);
  expect_values(y, {-1, -0.5, -1.0 / 3, -0.5, 1.0 / 3, -0.5, 1, 1.5}, "y");
  expect_values(mean, {2.5, 3}, "mean");
  expect_values(invstd, {2.0 / 3, 0.5}, "invstd");
}

// Each (sample, channel) is normalised on its own: a sample scaled and shifted gives the same output, and the
// other sample is untouched by it.
TEST(CpuInstanceNorm, SamplesAndChannelsAreNormalisedSeparately) {
  const int64_t pixels = 12, channels = 3;
  std::vector<float> x = test::random_normal(2 * pixels * channels, 3, 2.0f);
  std::vector<float> y(x.size()), mean(6), invstd(6);
  cpu::instance_norm_forward(x.data(), y.data(), mean.data(), invstd.data(), 2, pixels, channels, 1e-5f);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      for (int64_t p = 0; p < pixels; ++p) sum += y[(n * pixels + p) * channels + c];
      for (int64_t p = 0; p < pixels; ++p) squares += double(y[(n * pixels + p) * channels + c]) * y[(n * pixels + p) * channels + c];
      EXPECT_NEAR(sum / pixels, 0.0, 1e-6);
      EXPECT_NEAR(squares / pixels, 1.0, 1e-4);  // var / (var + 1e-5) with var ~ 4
    }
  }
  std::vector<float> moved = x, y_moved(x.size());
  for (int64_t i = 0; i < pixels * channels; ++i) moved[i] = 3.0f * moved[i] + 7.0f;  // sample 0 only
  cpu::instance_norm_forward(moved.data(), y_moved.data(), mean.data(), invstd.data(), 2, pixels, channels, 1e-5f);
  const test::CloseComparison cmp = test::compare_close(y_moved, as_double(y), 1e-5, 1e-5);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuInstanceNorm, BackwardMatchesFiniteDifferences) {
  const int64_t batch = 2, pixels = 6, channels = 3;
  std::vector<float> x = test::random_normal(batch * pixels * channels, 5, 1.5f);
  const std::vector<float> w = test::random_normal(x.size(), 6);
  std::vector<float> y(x.size()), mean(batch * channels), invstd(batch * channels), dx = test::poisoned(x.size());
  cpu::instance_norm_forward(x.data(), y.data(), mean.data(), invstd.data(), batch, pixels, channels, 1e-5f);
  cpu::instance_norm_backward(w.data(), x.data(), mean.data(), invstd.data(), dx.data(), batch, pixels, channels);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  const test::GradientComparison cmp = test::compare_with_finite_differences(
      x,
      [&] {
        cpu::instance_norm_forward(x.data(), y.data(), mean.data(), invstd.data(), batch, pixels, channels, 1e-5f);
        return test::project(y, w);
      },
      dx);
  EXPECT_GT(cmp.analytic_norm, 0.0);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuInstanceNorm, RefusesASinglePixel) {
  float x = 1, y = 0, m = 0, s = 0;
  EXPECT_THROW(cpu::instance_norm_forward(&x, &y, &m, &s, 1, 1, 1, 1e-5f), UsageError);
}

// ---------------------------------------------------------------- transposed convolution

// The geometry of ConvTranspose2d(c_in, c_out, k, stride, pad, output_padding) over an h x w input, written as
// the builder does: the conv from the output back to the input.
Conv2dGeometry transposed(int64_t batch, int64_t h, int64_t w, int64_t c_in, int64_t c_out, int64_t k,
                          int64_t stride, int64_t pad, int64_t output_padding) {
  Conv2dGeometry g;
  g.batch = batch, g.out_h = h, g.out_w = w, g.out_c = c_in, g.in_c = c_out;
  g.kernel_h = g.kernel_w = k, g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = pad;
  g.in_h = (h - 1) * stride - 2 * pad + k + output_padding;
  g.in_w = (w - 1) * stride - 2 * pad + k + output_padding;
  return g;
}

// pix2pixHD's upsampling layer, ConvTranspose2d(k 3, stride 2, padding 1, output_padding 1), on x = [[1, 2], [3, 4]]
// with kernel [[1, 2, 3], [4, 5, 6], [7, 8, 9]]. Without padding each x[h][w] adds x · kernel at rows 2h..2h+2,
// cols 2w..2w+2 of a 5 x 5 map:
//   [1, 2, 5, 4, 6], [4, 5, 14, 10, 12], [10, 14, 36, 24, 30], [12, 15, 34, 20, 24], [21, 24, 55, 32, 36];
// padding 1 crops a row and a column on each side and output_padding 1 gives one back at the bottom / right:
// rows and columns 1..4.
TEST(CpuConvTranspose2d, ForwardMatchesHandComputedValues) {
  const Conv2dGeometry g = transposed(1, 2, 2, 1, 1, 3, 2, 1, 1);
  ASSERT_EQ(g.in_h, 4);
  const std::vector<float> x{1, 2, 3, 4}, kernel{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y = test::poisoned(16);
  cpu::conv_transpose2d_forward(x.data(), kernel.data(), y.data(), g);
  expect_values(y, {5, 14, 10, 12, 14, 36, 24, 30, 15, 34, 20, 24, 24, 55, 32, 36}, "y");
}

// The transposed convolution is the adjoint of the convolution in its input: <conv(u), v> = <u, convT(v)>, and
// its values equal the conv's backward-data pass (computed there by another loop), for channels and a batch.
TEST(CpuConvTranspose2d, IsTheAdjointOfTheConvolution) {
  for (int64_t output_padding : {0, 1}) {
    const Conv2dGeometry g = transposed(2, 3, 4, 5, 3, 3, 2, 1, output_padding);
    const std::vector<float> v = test::random_normal(size_t(g.y_elements()), 7);  // convT input (conv output)
    const std::vector<float> u = test::random_normal(size_t(g.x_elements()), 8);  // conv input
    const std::vector<float> w = test::random_normal(size_t(g.w_elements()), 9);
    std::vector<float> t = test::poisoned(u.size()), conv(v.size()), reference(u.size());
    cpu::conv_transpose2d_forward(v.data(), w.data(), t.data(), g);
    cpu::conv2d_forward(u.data(), w.data(), conv.data(), g);
    cpu::conv2d_backward_data(v.data(), w.data(), reference.data(), g);
    EXPECT_EQ(test::count_unwritten(t), 0u);
    EXPECT_NEAR(test::project(conv, v), test::project(t, u), 1e-4 * std::fabs(test::project(t, u)));
    const test::CloseComparison cmp = test::compare_close(t, as_double(reference), 1e-6, 1e-6);
    EXPECT_TRUE(cmp.ok()) << cmp.description;
  }
}

// ---------------------------------------------------------------- reflection padding

// x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] padded top 1, bottom 2, left 2, right 1 (ReflectionPad2d((2, 1, 1, 2))):
// padded rows read source rows 1, 0, 1, 2, 1, 0 and padded columns source columns 2, 1, 0, 1, 2, 1. Backward with
// dy = 1: each pixel gets (times its row is read) x (times its column is read) = (2, 3, 1) x (1, 3, 2).
TEST(CpuReflectionPad, ForwardAndBackwardMatchHandComputedValues) {
  cpu::ReflectionPadGeometry g;
  g.batch = 1, g.in_h = 3, g.in_w = 3, g.channels = 1, g.top = 1, g.bottom = 2, g.left = 2, g.right = 1;
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y = test::poisoned(36), dx = test::poisoned(9);
  cpu::reflection_pad2d_forward(x.data(), y.data(), g);
  expect_values(y, {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5,
                    9, 8, 7, 8, 9, 8, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2}, "y");
  const std::vector<float> ones(36, 1.0f);
  cpu::reflection_pad2d_backward(ones.data(), dx.data(), g);
  expect_values(dx, {2, 6, 4, 3, 9, 6, 1, 3, 2}, "dx");
}

TEST(CpuReflectionPad, BackwardMatchesFiniteDifferences) {
  cpu::ReflectionPadGeometry g;
  g.batch = 2, g.in_h = 4, g.in_w = 5, g.channels = 3, g.top = 3, g.bottom = 1, g.left = 2, g.right = 4;
  std::vector<float> x = test::random_normal(size_t(g.batch * g.in_h * g.in_w * g.channels), 10);
  const std::vector<float> w = test::random_normal(size_t(g.batch * g.out_h() * g.out_w() * g.channels), 11);
  std::vector<float> y(w.size()), dx = test::poisoned(x.size());
  cpu::reflection_pad2d_backward(w.data(), dx.data(), g);
  const test::GradientComparison cmp = test::compare_with_finite_differences(
      x,
      [&] {
        cpu::reflection_pad2d_forward(x.data(), y.data(), g);
        return test::project(y, w);
      },
      dx);
  EXPECT_GT(cmp.analytic_norm, 0.0);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuReflectionPad, RefusesAPadAsWideAsTheImage) {
  cpu::ReflectionPadGeometry g;
  g.batch = 1, g.in_h = 3, g.in_w = 3, g.channels = 1, g.top = 3;
  float x[9] = {}, y[54] = {};
  EXPECT_THROW(cpu::reflection_pad2d_forward(x, y, g), UsageError);
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
