// sb::cpu::max_pool2d_* and avg_pool2d_* (src/cpu/pooling.h): hand-computed 3 x 3 stride-2 windows with
// padding (max ignores it; average with and without count_include_pad), argmax ties, the global average,
// NASNet's shifted subsample (a negative padding), and finite-difference gradients.
// Run: unit_tests --gtest_filter='CpuPooling*'.
#include <gtest/gtest.h>

#include <vector>

#include "scalebench/error.h"
#include "src/cpu/pooling.h"
#include "tests/support/conv_geometry.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::pool;

// fp32 storage of double sums of a few O(1) values.
constexpr double kForwardTolerance = 1e-6;
// Central differences (eps 1e-3) on data with no ties within 2e-3: 1e-2 relative on the norm.
constexpr double kGradientTolerance = 1e-2;

// 4 x 4 image 1..16, 3 x 3 windows, stride 2, padding 1: out 2 x 2 with windows rows/cols {-1..1} and {1..3}.
const std::vector<float> kImage{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

TEST(CpuPooling, MaxIgnoresPaddingAndRecordsArgmax) {
  const Conv2dGeometry g = pool(1, 4, 4, 1, 3, 2, 1, 1);
  std::vector<float> y(4);
  std::vector<int32_t> argmax(4);
  cpu::max_pool2d_forward(kImage.data(), y.data(), argmax.data(), g);
  EXPECT_EQ(y, (std::vector<float>{6, 8, 14, 16}));
  EXPECT_EQ(argmax, (std::vector<int32_t>{5, 7, 13, 15}));
  std::vector<float> dx = test::poisoned(16);
  cpu::max_pool2d_backward(std::vector<float>{1, 2, 3, 4}.data(), argmax.data(), dx.data(), g);
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}));
}

TEST(CpuPooling, MaxTieGoesToTheFirstInWindowOrderAndOverlapsSum) {
  // Constant image, 2 x 2 windows at stride 1: every window's first pixel wins; pixel (0, 1) is the first of
  // window (0, 1) only.
  const Conv2dGeometry g = pool(1, 3, 3, 1, 2, 1, 0, 0);
  const std::vector<float> x(9, 7.0f);
  std::vector<float> y(4);
  std::vector<int32_t> argmax(4);
  cpu::max_pool2d_forward(x.data(), y.data(), argmax.data(), g);
  EXPECT_EQ(argmax, (std::vector<int32_t>{0, 1, 3, 4}));
}

TEST(CpuPooling, AverageWithAndWithoutPaddingInTheCount) {
  const Conv2dGeometry g = pool(1, 4, 4, 1, 3, 2, 1, 1);
  std::vector<float> with(4), without(4);
  cpu::avg_pool2d_forward(kImage.data(), with.data(), g, true);
  cpu::avg_pool2d_forward(kImage.data(), without.data(), g, false);
  // Window (0, 0) holds 1, 2, 5, 6 (sum 14) and five padding zeros; window (1, 1) holds 6,7,8,10,11,12,14,15,16.
  EXPECT_NEAR(with[0], 14.0 / 9, kForwardTolerance);
  EXPECT_NEAR(without[0], 14.0 / 4, kForwardTolerance);
  EXPECT_NEAR(with[3], 99.0 / 9, kForwardTolerance);
  EXPECT_NEAR(without[3], 99.0 / 9, kForwardTolerance);
  EXPECT_NEAR(without[1], (2 + 3 + 4 + 6 + 7 + 8) / 6.0, kForwardTolerance);
}

TEST(CpuPooling, GlobalAverageIsTheImageMean) {
  const Conv2dGeometry g = pool(2, 4, 4, 2, 4, 1, 0, 0);
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  std::vector<float> y(4);
  cpu::avg_pool2d_forward(x.data(), y.data(), g, true);
  // Image 0 channel 0 holds 0, 2, ..., 30 (mean 15); channel 1: mean 16; image 1: +32.
  EXPECT_EQ(y, (std::vector<float>{15, 16, 47, 48}));
}

TEST(CpuPooling, RefusesWindowsThatCanBeAllPadding) {
  EXPECT_THROW(cpu::check_pool_geometry(pool(1, 4, 4, 1, 2, 2, 2, 2)), UsageError);
}

// NASNet's factorized-reduction path 2: ZeroPad2d((0, 1, 0, 1)), crop [1:, 1:], 1 x 1 average at stride 2 =
// the odd rows and columns, and a zero row/column past an odd-sized input. As pool geometry: pads -1 / +1.
TEST(CpuPooling, NegativePaddingCropsTheShiftedSubsample) {
  for (int64_t size : {5, 6}) {
    const Conv2dGeometry g = pool(2, size, size, 3, 1, 2, -1, 1);
    ASSERT_EQ(g.out_h, (size + 1) / 2);  // PyTorch: floor((size + 1 - 1 - 1) / 2) + 1
    const std::vector<float> x = test::random_normal(size_t(g.x_elements()), 53);
    std::vector<float> y = test::poisoned(size_t(g.y_elements()));
    cpu::avg_pool2d_forward(x.data(), y.data(), g, true);
    std::vector<float> dy = test::random_normal(y.size(), 54), dx = test::poisoned(x.size());
    cpu::avg_pool2d_backward(dy.data(), dx.data(), g, true);
    std::vector<float> expected_dx(x.size(), 0.0f);
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          for (int64_t c = 0; c < 3; ++c) {
            const int64_t ih = 2 * oh + 1, iw = 2 * ow + 1, o = ((n * g.out_h + oh) * g.out_w + ow) * 3 + c;
            const bool inside = ih < size && iw < size;
            const int64_t i = ((n * size + ih) * size + iw) * 3 + c;
            EXPECT_EQ(y[size_t(o)], inside ? x[size_t(i)] : 0.0f) << "size " << size << " at " << oh << ", " << ow;
            if (inside) expected_dx[size_t(i)] = dy[size_t(o)];
          }
        }
      }
    }
    EXPECT_EQ(dx, expected_dx) << "size " << size;
  }
  // A window of padding only has no maximum and no input pixel to divide by.
  EXPECT_NO_THROW(cpu::check_pool_geometry(pool(1, 5, 5, 1, 1, 2, -1, 1), true));
  EXPECT_THROW(cpu::check_pool_geometry(pool(1, 5, 5, 1, 1, 2, -1, 1)), UsageError);
  EXPECT_NO_THROW(cpu::check_pool_geometry(pool(1, 6, 6, 1, 1, 2, -1, 1)));  // even: every window inside
}

TEST(CpuPooling, GradientsMatchFiniteDifferences) {
  const Conv2dGeometry g = pool(2, 7, 6, 3, 3, 2, 1, 1);
  std::vector<float> x = test::random_normal(size_t(g.x_elements()), 51);
  const std::vector<float> w = test::random_normal(size_t(g.y_elements()), 52);
  for (bool include : {true, false}) {
    std::vector<float> dx(x.size());
    cpu::avg_pool2d_backward(w.data(), dx.data(), g, include);
    auto loss = [&] {
      std::vector<float> y(w.size());
      cpu::avg_pool2d_forward(x.data(), y.data(), g, include);
      return test::project(y, w);
    };
    const auto cmp = test::compare_with_finite_differences(x, loss, dx);
    EXPECT_LE(cmp.relative_error, kGradientTolerance) << "avg " << include << ": " << cmp.describe();
  }
  std::vector<float> y(w.size()), dx(x.size());
  std::vector<int32_t> argmax(w.size());
  cpu::max_pool2d_forward(x.data(), y.data(), argmax.data(), g);
  cpu::max_pool2d_backward(w.data(), argmax.data(), dx.data(), g);
  auto loss = [&] {
    std::vector<float> out(w.size());
    std::vector<int32_t> where(w.size());
    cpu::max_pool2d_forward(x.data(), out.data(), where.data(), g);
    return test::project(out, w);
  };
  const auto cmp = test::compare_with_finite_differences(x, loss, dx);
  EXPECT_GT(cmp.analytic_norm, 0.0);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << "max: " << cmp.describe();
}

}  // namespace
}  // namespace sb
