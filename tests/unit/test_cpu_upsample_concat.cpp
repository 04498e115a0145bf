// sb::cpu::upsample_* (src/cpu/upsample.h) and concat_last / split_last (src/cpu/concat.h): hand-computed
// nearest ×2 and bilinear 2 -> 4 rows (align_corners false and true, PyTorch's values), the broadcast of a
// 1 x 1 image (DeepLab's image pooling), adjoint checks of the backward passes, and a concat/split round trip.
// Run: unit_tests --gtest_filter='CpuUpsample*:CpuConcat*'.
#include <gtest/gtest.h>

#include <vector>

#include "src/cpu/concat.h"
#include "src/cpu/upsample.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Double weights on small exact inputs, one fp32 rounding: 1e-6.
constexpr double kTolerance = 1e-6;
// <dy, resize(x)> = <resize_backward(dy), x>: double sums, fp32 outputs; 1e-5 relative.
constexpr double kAdjointRtol = 1e-5;

TEST(CpuUpsample, NearestDoublesEachPixel) {
  const cpu::ResizeGeometry g{1, 2, 2, 1, 4, 4};
  std::vector<float> y(16);
  cpu::upsample_nearest_forward(std::vector<float>{1, 2, 3, 4}.data(), y.data(), g);
  EXPECT_EQ(y, (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  std::vector<float> dx(4);
  cpu::upsample_nearest_backward(std::vector<float>(16, 1.0f).data(), dx.data(), g);
  EXPECT_EQ(dx, (std::vector<float>{4, 4, 4, 4}));
}

TEST(CpuUpsample, BilinearRowsAsPyTorch) {
  // A 2 x 1 column [0, 1] resized to 4 x 1. align_corners=False: src = (o + 0.5) / 2 - 0.5 clamped at 0 ->
  // 0, 0.25, 0.75, 1 (the last clamps i1); align_corners=True: src = o / 3 -> 0, 1/3, 2/3, 1.
  const cpu::ResizeGeometry g{1, 2, 1, 1, 4, 1};
  std::vector<float> y(4);
  cpu::upsample_bilinear_forward(std::vector<float>{0, 1}.data(), y.data(), g, false);
  const auto plain = test::compare_close(y, {0, 0.25, 0.75, 1}, kTolerance, 0);
  EXPECT_TRUE(plain.ok()) << plain.description;
  cpu::upsample_bilinear_forward(std::vector<float>{0, 1}.data(), y.data(), g, true);
  const auto corners = test::compare_close(y, {0, 1.0 / 3, 2.0 / 3, 1}, kTolerance, 0);
  EXPECT_TRUE(corners.ok()) << corners.description;
}

TEST(CpuUpsample, OnePixelBroadcasts) {
  const cpu::ResizeGeometry g{2, 1, 1, 3, 5, 4};
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  std::vector<float> y(2 * 5 * 4 * 3);
  for (bool corners : {false, true}) {
    cpu::upsample_bilinear_forward(x.data(), y.data(), g, corners);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], x[(i / 60) * 3 + i % 3]);
  }
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

TEST(CpuUpsample, BackwardPassesAreAdjoints) {
  for (const cpu::ResizeGeometry& g : {cpu::ResizeGeometry{2, 5, 3, 4, 17, 13}, cpu::ResizeGeometry{1, 6, 7, 2, 3, 4},
                                       cpu::ResizeGeometry{1, 4, 4, 3, 8, 8}}) {
    const auto x = test::random_normal(size_t(g.batch * g.in_h * g.in_w * g.channels), 71);
    const auto dy = test::random_normal(size_t(g.batch * g.out_h * g.out_w * g.channels), 72);
    std::vector<float> y(dy.size()), dx(x.size());
    for (int mode = 0; mode < 3; ++mode) {
      if (mode == 0) {
        cpu::upsample_nearest_forward(x.data(), y.data(), g);
        cpu::upsample_nearest_backward(dy.data(), dx.data(), g);
      } else {
        cpu::upsample_bilinear_forward(x.data(), y.data(), g, mode == 2);
        cpu::upsample_bilinear_backward(dy.data(), dx.data(), g, mode == 2);
      }
      ASSERT_GT(test::l2_norm(dx), 0.0);
      const double forward = dot(dy, y);
      EXPECT_NEAR(dot(dx, x), forward, kAdjointRtol * (1 + std::fabs(forward))) << "mode " << mode;
    }
  }
}

TEST(CpuConcat, ConcatThenSplitRoundTrips) {
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40, 50, 60};  // (2, 2) and (2, 3)
  std::vector<float> y(10);
  cpu::concat_last({a.data(), b.data()}, {2, 3}, y.data(), 2);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 10, 20, 30, 3, 4, 40, 50, 60}));
  std::vector<float> a2(4), b2(6);
  cpu::split_last(y.data(), {a2.data(), b2.data()}, {2, 3}, 2);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
}

}  // namespace
}  // namespace sb
