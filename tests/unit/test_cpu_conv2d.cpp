// sb::cpu::conv2d_* (src/cpu/conv2d.h): hand-computed outputs for plain, strided + padded, dilated,
// asymmetrically padded and depthwise cases; the backward passes as exact adjoints of the forward map
// (<dy, conv(x, w)> = <backward_data(dy, w), x> = <backward_filter(x, dy), w>) over grouped, strided,
// dilated and padded geometries; geometry checks. Run: unit_tests --gtest_filter='CpuConv2d*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/conv2d.h"
#include "tests/support/conv_geometry.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::geometry;

// Hand-computed cases are small integers: exact in fp32.
constexpr double kExact = 0.0;
// The adjoint identity: three double sums of O(100) products of O(1) values, each rounded once to fp32 per
// element before the dot products; 1e-5 relative is ~100 ulps of margin.
constexpr double kAdjointRtol = 1e-5;

std::vector<float> run_forward(const std::vector<float>& x, const std::vector<float>& w, const Conv2dGeometry& g) {
  std::vector<float> y = test::poisoned(static_cast<size_t>(g.y_elements()));
  cpu::conv2d_forward(x.data(), w.data(), y.data(), g);
  EXPECT_EQ(test::count_unwritten(y), 0u);
  return y;
}

void expect_equal(const std::vector<float>& got, const std::vector<double>& want) {
  const auto cmp = test::compare_close(got, want, kExact, kExact);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

// x = 1..9 on a 3 x 3 single-channel image, w = [[1, 2], [3, 4]].
const std::vector<float> kImage{1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<float> kKernel{1, 2, 3, 4};

TEST(CpuConv2d, PlainTwoByTwo) {
  expect_equal(run_forward(kImage, kKernel, geometry(1, 3, 3, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0)), {37, 47, 67, 77});
}

TEST(CpuConv2d, StridedWithPadding) {
  // Pad 1 on every side, stride 2: out 2 x 2, each window partly in the padding.
  expect_equal(run_forward(kImage, kKernel, geometry(1, 3, 3, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1)), {4, 18, 36, 77});
}

TEST(CpuConv2d, DilatedTapsSkipPixels) {
  // Dilation 2: the taps are the four corners 1, 3, 7, 9.
  expect_equal(run_forward(kImage, kKernel, geometry(1, 3, 3, 1, 1, 2, 2, 1, 2, 0, 0, 0, 0)), {64});
}

TEST(CpuConv2d, AsymmetricPadding) {
  // One row of padding at the bottom only, one column at the left only: out 3 x 3.
  const std::vector<float> y = run_forward(kImage, kKernel, geometry(1, 3, 3, 1, 1, 2, 2, 1, 1, 0, 1, 1, 0));
  ASSERT_EQ(y.size(), 9u);
  EXPECT_EQ(y[0], 2 * 1 + 4 * 4);  // taps (0, 0) and (1, 0) under w[0][1] and w[1][1]
  EXPECT_EQ(y[1], 1 * 1 + 2 * 2 + 3 * 4 + 4 * 5);
  EXPECT_EQ(y[8], 1 * 8 + 2 * 9);  // bottom row: only the kernel's first row lands inside
}

TEST(CpuConv2d, DepthwiseScalesEachChannelByItsOwnFilter) {
  // Two channels, groups 2, 1 x 1 filters 2 and -3.
  const std::vector<float> x{1, 10, 2, 20, 3, 30, 4, 40};  // (1, 2, 2, 2)
  expect_equal(run_forward(x, {2, -3}, geometry(1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 2)),
               {2, -30, 4, -60, 6, -90, 8, -120});
}

TEST(CpuConv2d, GroupsSeeOnlyTheirChannels) {
  // 4 input channels, 2 groups, one output per group summing its two channels: (1, 1, 1, 4) -> (1, 1, 1, 2).
  expect_equal(run_forward({1, 2, 3, 4}, {1, 1, 1, 1}, geometry(1, 1, 1, 4, 2, 1, 1, 1, 1, 0, 0, 0, 0, 2)), {3, 7});
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += double(a[i]) * b[i];
  return sum;
}

class CpuConv2dAdjoint : public ::testing::TestWithParam<Conv2dGeometry> {};

TEST_P(CpuConv2dAdjoint, BackwardPassesAreTheForwardsAdjoints) {
  const Conv2dGeometry g = GetParam();
  const auto x = test::random_normal(size_t(g.x_elements()), 1);
  const auto w = test::random_normal(size_t(g.w_elements()), 2);
  const auto dy = test::random_normal(size_t(g.y_elements()), 3);
  const std::vector<float> y = run_forward(x, w, g);
  std::vector<float> dx = test::poisoned(x.size()), dw = test::poisoned(w.size());
  cpu::conv2d_backward_data(dy.data(), w.data(), dx.data(), g);
  cpu::conv2d_backward_filter(x.data(), dy.data(), dw.data(), g);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  EXPECT_EQ(test::count_unwritten(dw), 0u);
  ASSERT_GT(test::l2_norm(y), 0.0);
  ASSERT_GT(test::l2_norm(dx), 0.0);
  ASSERT_GT(test::l2_norm(dw), 0.0);
  const double forward = dot(dy, y);
  EXPECT_NEAR(dot(dx, x), forward, kAdjointRtol * (1 + std::fabs(forward)));
  EXPECT_NEAR(dot(dw, w), forward, kAdjointRtol * (1 + std::fabs(forward)));
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuConv2dAdjoint,
    ::testing::Values(geometry(2, 7, 6, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1),   // 3 x 3 "same"
                      geometry(2, 7, 6, 4, 6, 1, 1, 1, 1, 0, 0, 0, 0),   // pointwise
                      geometry(2, 8, 7, 3, 4, 3, 3, 2, 1, 0, 1, 0, 1),   // strided, TF "SAME" (asymmetric)
                      geometry(1, 9, 9, 4, 4, 3, 3, 1, 3, 3, 3, 3, 3),   // atrous rate 3
                      geometry(2, 7, 7, 6, 6, 5, 5, 2, 1, 2, 2, 2, 2, 6), // depthwise 5 x 5 stride 2
                      geometry(1, 6, 5, 6, 4, 3, 2, 1, 2, 1, 0, 2, 1, 2))); // grouped, dilated, asymmetric

TEST(CpuConv2d, RefusesInconsistentGeometry) {
  Conv2dGeometry g = geometry(1, 3, 3, 3, 4, 1, 1, 1, 1, 0, 0, 0, 0, 2);  // 2 groups do not divide 3 channels
  EXPECT_THROW(cpu::check_conv2d_geometry(g), UsageError);
  g = geometry(1, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  g.out_h = 4;  // not what the sizes give
  EXPECT_THROW(cpu::check_conv2d_geometry(g), UsageError);
  g = geometry(1, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  g.pad_left = -1;
  g.out_w = 2;
  EXPECT_THROW(cpu::check_conv2d_geometry(g), UsageError);
}

}  // namespace
}  // namespace sb
