// sb::cpu kernels of StyleGAN's generator ops: pixel norm (src/cpu/pixel_norm.h), noise inputs
// (src/cpu/noise_injection.h), style modulation (src/cpu/style_modulation.h), style mixing (src/cpu/style_mix.h)
// and the weights' moving average (src/cpu/ema.h). Hand-computed values, moments of the noise, backward passes
// against central finite differences of a random projection; outputs NaN-poisoned first.
// Run: unit_tests --gtest_filter='CpuPixelNorm*:CpuNoiseInjection*:CpuStyleModulation*:CpuStyleMix*:CpuEma*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/cpu/ema.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/pixel_norm.h"
#include "src/cpu/style_mix.h"
#include "src/cpu/style_modulation.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-7;
constexpr double kGradientTolerance = 1e-2;  // central differences, eps 1e-3, of an fp32 loss

TEST(CpuPixelNorm, DividesEachRowByItsRootMeanSquare) {
  const std::vector<float> x = {3, 4, 0, 0, 2, 2};  // rows (3, 4, 0) rms 5/sqrt(3), (0, 2, 2) rms sqrt(8/3)
  std::vector<float> y = test::poisoned(6);
  cpu::pixel_norm_forward(x.data(), y.data(), 2, 3);
  const double a = std::sqrt(3.0) / 5, b = 1 / std::sqrt(8.0 / 3);
  const auto cmp = test::compare_close(y, {3 * a, 4 * a, 0, 0, 2 * b, 2 * b}, 1e-6, 1e-6);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuPixelNorm, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 8;
  std::vector<float> x = test::random_normal(rows * cols, 71);
  const std::vector<float> projection = test::random_normal(rows * cols, 72);
  std::vector<float> y(rows * cols), dx = test::poisoned(rows * cols);
  cpu::pixel_norm_backward(x.data(), projection.data(), dx.data(), rows, cols);
  const auto cmp = test::compare_with_finite_differences(x, [&] {
    cpu::pixel_norm_forward(x.data(), y.data(), rows, cols);
    return test::project(y, projection);
  }, dx);
  EXPECT_GT(cmp.analytic_norm, 0.1);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuNoiseInjection, NoiseIsStandardNormalAndKeyedByTheGlobalSample) {
  const int64_t pixels = 4096;
  double sum = 0, sum_sq = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    const double v = cpu::noise_value(5, 100, 7, p);
    sum += v;
    sum_sq += v * v;
  }
  EXPECT_NEAR(sum / pixels, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / pixels, 1.0, 0.06);
  EXPECT_EQ(cpu::noise_value(5, 100, 7, 11), cpu::noise_value(5, 100, 7, 11)) << "a pure function";
  EXPECT_NE(cpu::noise_value(5, 100, 7, 11), cpu::noise_value(5, 100, 8, 11)) << "another sample";
  EXPECT_NE(cpu::noise_value(5, 100, 7, 11), cpu::noise_value(5, 101, 7, 11)) << "another step or node";
  // A rank holding global samples 2 and 3 draws what one rank with samples 0..3 draws for them.
  const int64_t channels = 3, px = 5;
  const std::vector<float> weight = {0.5f, -1.0f, 2.0f};
  const std::vector<float> x = test::random_normal(4 * px * channels, 73);
  const std::vector<int32_t> all = {0, 1, 2, 3}, mine = {2, 3};
  std::vector<float> whole(x.size()), part(x.size() / 2);
  cpu::noise_injection_forward(x.data(), weight.data(), all.data(), whole.data(), 4, px, channels, 9, 0);
  cpu::noise_injection_forward(x.data() + 2 * px * channels, weight.data(), mine.data(), part.data(), 2, px, channels,
                               9, 0);
  EXPECT_EQ(std::vector<float>(whole.begin() + 2 * px * channels, whole.end()), part);
  for (int64_t c = 0; c < channels; ++c) {  // y - x = weight[c] · one noise value per pixel
    EXPECT_NEAR(whole[c] - x[c], weight[c] * cpu::noise_value(9, 0, 0, 0), 1e-6);
  }
}

TEST(CpuNoiseInjection, WeightGradientMatchesFiniteDifferences) {
  const int64_t batch = 2, pixels = 6, channels = 3;
  const std::vector<int32_t> ids = {4, 9};
  const std::vector<float> x = test::random_normal(batch * pixels * channels, 74);
  std::vector<float> weight = test::random_normal(channels, 75);
  const std::vector<float> projection = test::random_normal(x.size(), 76);
  std::vector<float> y(x.size()), dweight = test::poisoned(channels);
  cpu::noise_injection_backward(projection.data(), ids.data(), dweight.data(), batch, pixels, channels, 3, 8);
  const auto cmp = test::compare_with_finite_differences(weight, [&] {
    cpu::noise_injection_forward(x.data(), weight.data(), ids.data(), y.data(), batch, pixels, channels, 3, 8);
    return test::project(y, projection);
  }, dweight);
  EXPECT_GT(cmp.analytic_norm, 0.1);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuStyleModulation, ScalesByOnePlusTheStyleAndShifts) {
  const std::vector<float> x = {1, 2, 3, 4};      // (1, 2 pixels, 2 channels)
  const std::vector<float> style = {1, -0.5f, 10, 20};  // scales 2, 0.5; shifts 10, 20
  std::vector<float> y = test::poisoned(4);
  cpu::style_modulation_forward(x.data(), style.data(), y.data(), 1, 2, 2);
  const auto cmp = test::compare_close(y, {12, 21, 16, 22}, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuStyleModulation, BackwardMatchesFiniteDifferences) {
  const int64_t batch = 2, pixels = 5, channels = 3;
  std::vector<float> x = test::random_normal(batch * pixels * channels, 77);
  std::vector<float> style = test::random_normal(batch * 2 * channels, 78);
  const std::vector<float> projection = test::random_normal(x.size(), 79);
  std::vector<float> y(x.size()), dx = test::poisoned(x.size()), dstyle = test::poisoned(style.size());
  cpu::style_modulation_backward(x.data(), style.data(), projection.data(), dx.data(), dstyle.data(), batch, pixels,
                                 channels);
  auto loss = [&] {
    cpu::style_modulation_forward(x.data(), style.data(), y.data(), batch, pixels, channels);
    return test::project(y, projection);
  };
  const auto by_x = test::compare_with_finite_differences(x, loss, dx);
  EXPECT_LE(by_x.relative_error, kGradientTolerance) << by_x.describe();
  const auto by_style = test::compare_with_finite_differences(style, loss, dstyle);
  EXPECT_GT(by_style.analytic_norm, 0.1);
  EXPECT_LE(by_style.relative_error, kGradientTolerance) << by_style.describe();
}

TEST(CpuStyleMix, LayersBelowTheCrossoverReadTheFirstLatent) {
  const int64_t batch = 2, dim = 2, layers = 3;
  const std::vector<float> w = {1, 1, 2, 2, -1, -1, -2, -2};  // rows: z1 of samples 0, 1; then z2 of 0, 1
  const std::vector<int32_t> crossover = {1, 3};            // sample 1: no mixing
  std::vector<std::vector<float>> out(layers, test::poisoned(batch * dim));
  float* pointers[3] = {out[0].data(), out[1].data(), out[2].data()};
  cpu::style_mix_forward(w.data(), crossover.data(), pointers, layers, batch, dim);
  EXPECT_EQ(out[0], (std::vector<float>{1, 1, 2, 2}));
  EXPECT_EQ(out[1], (std::vector<float>{-1, -1, 2, 2}));
  EXPECT_EQ(out[2], (std::vector<float>{-1, -1, 2, 2}));
  const std::vector<float> d0 = {1, 2, 3, 4}, d1 = {10, 20, 30, 40}, d2 = {100, 200, 300, 400};
  const float* dpointers[3] = {d0.data(), d1.data(), d2.data()};
  std::vector<float> dw = test::poisoned(2 * batch * dim);
  cpu::style_mix_backward(dpointers, crossover.data(), dw.data(), layers, batch, dim);
  EXPECT_EQ(dw, (std::vector<float>{1, 2, 333, 444, 110, 220, 0, 0}));
}

TEST(CpuEma, CopiesOnTheFirstStepThenInterpolates) {
  const std::vector<float> param = {1, -2};
  std::vector<float> average = {100, 100};
  cpu::ema_update(param.data(), average.data(), 2, 0.75f, true);
  EXPECT_EQ(average, param);
  const std::vector<float> moved = {5, 2};
  cpu::ema_update(moved.data(), average.data(), 2, 0.75f, false);
  EXPECT_FLOAT_EQ(average[0], 5 + 0.75f * (1 - 5));
  EXPECT_FLOAT_EQ(average[1], 2 + 0.75f * (-2 - 2));
}

}  // namespace
}  // namespace sb
