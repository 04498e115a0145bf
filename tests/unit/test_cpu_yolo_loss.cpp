// sb::cpu::yolo_loss_* (src/cpu/yolo_loss.h): a box that matches anchor 8 exactly goes to head 0's anchor 2 at
// its cell (the gradient at zero logits shows where: -1/2 objectness, -1/2 and +1/2 on the classes, 0 box
// terms when the box sits on the cell's centre), the loss at zero logits counted by hand, a later box winning
// a shared slot, padding rows ignored, and finite differences of the whole loss over random logits.
// Run: unit_tests --gtest_filter='CpuYoloLoss*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/cpu/yolo_loss.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

// Sums of O(10^3) double terms rounded once: 1e-9 relative.
constexpr double kLossTolerance = 1e-9;
// Central differences (eps 1e-3) of a smooth loss (the ignore mask is piecewise constant; random logits of
// scale 0.5 rarely sit within eps of its 0.7 threshold): 1e-2 relative on the norm.
constexpr double kGradientTolerance = 1e-2;

struct Heads {
  cpu::YoloGeometry g;
  std::vector<std::vector<float>> values;
  Heads(int64_t batch, int64_t classes, int64_t boxes, int64_t g0) {
    g.batch = batch, g.classes = classes, g.boxes = boxes;
    g.grid[0] = g0, g.grid[1] = 2 * g0, g.grid[2] = 4 * g0;
    for (int s = 0; s < 3; ++s) values.emplace_back(size_t(batch * g.grid[s] * g.grid[s] * g.channels()), 0.0f);
  }
  const float* const* pointers() {
    for (int s = 0; s < 3; ++s) p[s] = values[size_t(s)].data();
    return p;
  }
  int64_t index(int s, int64_t n, int64_t gy, int64_t gx, int a, int64_t k) const {
    return ((n * g.grid[s] + gy) * g.grid[s] + gx) * g.channels() + a * (5 + g.classes) + k;
  }
  const float* p[3];
};

std::vector<std::vector<float>> gradients(Heads& h, const std::vector<float>& truth) {
  std::vector<std::vector<float>> d;
  float* out[3];
  for (int s = 0; s < 3; ++s) d.emplace_back(h.values[size_t(s)].size(), NAN), out[s] = d.back().data();
  cpu::yolo_loss_backward(h.pointers(), truth.data(), out, h.g, 1.0f);
  return d;
}

TEST(CpuYoloLoss, AnExactAnchorBoxLandsInItsSlot) {
  Heads h(1, 4, 2, 4);
  // Anchor 8 (373 x 326 of 608) centred on head 0's cell (1, 2); the second row is padding.
  const double w = 373.0 / 608, hh = 326.0 / 608;
  const std::vector<float> truth{2, 2.5f / 4, 1.5f / 4, float(w), float(hh), 0, 0, 0, 0, 0};
  const auto d = gradients(h, truth);
  const int64_t slot = h.index(0, 0, 1, 2, 2, 0);
  EXPECT_NEAR(d[0][size_t(slot + 4)], -0.5, 1e-7);  // objectness target 1
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(d[0][size_t(slot + k)], 0.0, 1e-7) << "box term " << k;
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(d[0][size_t(slot + 5 + c)], c == 2 ? -0.5 : 0.5, 1e-7) << "class " << c;
  // Every other prediction is a negative: objectness gradient 1/2, nothing else.
  int64_t negatives = 0;
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < d[size_t(s)].size(); ++i) {
      const int64_t k = int64_t(i) % (5 + h.g.classes);
      if (s == 0 && int64_t(i) >= slot && int64_t(i) < slot + 9) continue;
      ASSERT_EQ(d[size_t(s)][i], k == 4 ? 0.5f : 0.0f) << "head " << s << " element " << i;
      negatives += k == 4;
    }
  }
  EXPECT_EQ(negatives, 3 * (16 + 64 + 256) - 1);
  // Zero logits: log 2 for every objectness and class term, no box term (the centre and size are exact).
  const double want = std::log(2.0) * double(negatives + 1 + 4);
  EXPECT_NEAR(cpu::yolo_loss_forward(h.pointers(), truth.data(), h.g), want, kLossTolerance * want);
}

TEST(CpuYoloLoss, TheLaterBoxWinsASharedSlot) {
  Heads h(1, 3, 2, 2);
  const float w = 10.0f / 608, hh = 13.0f / 608;  // anchor 0: head 2, anchor 0
  const std::vector<float> truth{0, 0.1f, 0.1f, w, hh, 1, 0.11f, 0.12f, w, hh};
  const auto d = gradients(h, truth);
  const int64_t slot = h.index(2, 0, 0, 0, 0, 0);
  EXPECT_NEAR(d[2][size_t(slot + 5 + 1)], -0.5, 1e-7) << "class 1: the second box";
  EXPECT_NEAR(d[2][size_t(slot + 5 + 0)], 0.5, 1e-7);
}

TEST(CpuYoloLoss, GradientsMatchFiniteDifferences) {
  Heads h(2, 3, 3, 2);
  for (int s = 0; s < 3; ++s) h.values[size_t(s)] = test::random_normal(h.values[size_t(s)].size(), 100 + s, 0.5f);
  // Image 0: three boxes of several sizes (two heads); image 1: one box and two padding rows.
  const std::vector<float> truth{0, 0.3f, 0.4f, 0.5f, 0.4f, 1, 0.7f, 0.2f, 0.05f, 0.08f, 2, 0.52f, 0.61f, 0.2f, 0.3f,
                                 2, 0.5f, 0.5f, 0.9f, 0.8f, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0};
  const auto d = gradients(h, truth);
  for (int s = 0; s < 3; ++s) {
    auto loss = [&] { return cpu::yolo_loss_forward(h.pointers(), truth.data(), h.g); };
    const auto cmp = test::compare_with_finite_differences(h.values[size_t(s)], loss, d[size_t(s)]);
    EXPECT_GT(cmp.analytic_norm, 0.0) << "head " << s;
    EXPECT_LE(cmp.relative_error, kGradientTolerance) << "head " << s << ": " << cmp.describe();
  }
}

}  // namespace
}  // namespace sb
