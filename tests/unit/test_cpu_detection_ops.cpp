// The CPU references of Mask R-CNN's ops against hand-computed values: FrozenBatchNorm's affine, RoIAlign on a
// linear map (bilinear interpolation of a linear function is exact, so each bin is the function at the bin's
// centre) and its backward pass as the forward's adjoint, the two weighted losses, torchvision's anchors, bitmask
// NMS, the proposal stage's order and padding, anchor and RoI target assignment, and mask rasterisation.
// Run: unit_tests --gtest_filter='Cpu*Detection*:CpuFrozenAffine*:CpuRoiAlign*:CpuAnchors*:CpuNms*:CpuProposals*'.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "src/cpu/detection_losses.h"
#include "src/cpu/detection_math.h"
#include "src/cpu/detection_targets.h"
#include "src/cpu/frozen_affine.h"
#include "src/cpu/proposals.h"
#include "src/cpu/roi_align.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

TEST(CpuFrozenAffine, ScaleShiftAndFusedRelu) {
  const std::vector<float> x = {1, -2, 3, 0.5f, -1, 2}, scale = {2, 0.5f, -1}, shift = {0.5f, 1, 1};
  std::vector<float> y(6), dx(6);
  cpu::frozen_affine_forward(x.data(), scale.data(), shift.data(), y.data(), 2, 3, false);
  EXPECT_EQ(y, (std::vector<float>{2.5f, 0, -2, 1.5f, 0.5f, -1}));
  cpu::frozen_affine_forward(x.data(), scale.data(), shift.data(), y.data(), 2, 3, true);
  EXPECT_EQ(y, (std::vector<float>{2.5f, 0, 0, 1.5f, 0.5f, 0}));
  const std::vector<float> dy = {1, 1, 1, 2, 2, 2};
  cpu::frozen_affine_backward(dy.data(), y.data(), scale.data(), dx.data(), 2, 3, true);
  EXPECT_EQ(dx, (std::vector<float>{2, 0, 0, 4, 1, 0}));
  cpu::frozen_affine_backward(dy.data(), y.data(), scale.data(), dx.data(), 2, 3, false);
  EXPECT_EQ(dx, (std::vector<float>{2, 0.5f, -1, 4, 1, -2}));
}

// Levels P2 (8 x 8) and P3 (4 x 4) of a 32-pixel image, 2 channels: f0 = 1 + 2x + 3y, f1 = 10 - x on P2 and
// 100 + x on P3, x and y in the level's pixels.
struct LinearMaps {
  cpu::RoiAlignGeometry g;
  std::vector<float> p2, p3;
  LinearMaps() {
    g.batch = 1, g.channels = 2, g.output_size = 2, g.levels = 2, g.first_level = 2;
    g.height[0] = g.width[0] = 8, g.height[1] = g.width[1] = 4;
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8; ++x) p2.insert(p2.end(), {float(1 + 2 * x + 3 * y), float(10 - x)});
    }
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) p3.insert(p3.end(), {0.0f, float(100 + x)});
    }
  }
};

TEST(CpuRoiAlign, BinsOfALinearMapAreItsValueAtTheBinCentres) {
  LinearMaps m;
  // (4, 8, 20, 24) on P2 is (1, 2, 5, 6): 2 x 2 bins of 2 pixels, centres x = 2, 4 and y = 3, 5. sqrt(area) =
  // 16 maps to level floor(4 + log2(16 / 224)) = 0 -> clamped to P2. The second RoI is 224 x 224: level 4 ->
  // clamped to P3 (scale 1/8: 4 .. 228 -> 0.5 .. 28.5), bins of 14 pixels with samples at 4 and 11 (18, 25) on
  // a 4 x 4 map: only bin (0, 0)'s sample (4, 4) is within a pixel of the map, clamped to (3, 3) = 103, a quarter
  // of the bin's four samples; every other sample is empty (torchvision's rule), its bins 0.
  m.g.rois = 2;
  const std::vector<float> rois = {0, 4, 8, 20, 24, 0, 4, 4, 228, 228};
  std::vector<float> y(2 * 2 * 2 * 2);
  const float* levels[2] = {m.p2.data(), m.p3.data()};
  cpu::roi_align_forward(levels, rois.data(), y.data(), m.g);
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 8), (std::vector<float>{14, 8, 18, 6, 20, 8, 24, 6}));
  EXPECT_EQ(std::vector<float>(y.begin() + 8, y.end()), (std::vector<float>{0, 25.75f, 0, 0, 0, 0, 0, 0}));
}

TEST(CpuRoiAlign, BackwardIsTheForwardsAdjoint) {
  LinearMaps m;
  m.g.rois = 6, m.g.output_size = 3;
  std::vector<float> rois;
  const std::vector<float> corners = test::random_uniform(6 * 4, 3, -4.0f, 36.0f);
  for (int r = 0; r < 6; ++r) {
    const float* c = &corners[size_t(r * 4)];
    rois.insert(rois.end(), {0, std::min(c[0], c[2]), std::min(c[1], c[3]), std::max(c[0], c[2]) + 120 * (r % 2),
                             std::max(c[1], c[3]) + 120 * (r % 2)});
  }
  const std::vector<float> f2 = test::random_normal(m.p2.size(), 4), f3 = test::random_normal(m.p3.size(), 5);
  const std::vector<float> dy = test::random_normal(6 * 9 * 2, 6);
  std::vector<float> y(dy.size()), d2(f2.size()), d3(f3.size());
  const float* levels[2] = {f2.data(), f3.data()};
  float* dlevels[2] = {d2.data(), d3.data()};
  cpu::roi_align_forward(levels, rois.data(), y.data(), m.g);
  cpu::roi_align_backward(dy.data(), rois.data(), dlevels, m.g);
  const double lhs = std::inner_product(y.begin(), y.end(), dy.begin(), 0.0);
  const double rhs = std::inner_product(f2.begin(), f2.end(), d2.begin(), 0.0) +
                     std::inner_product(f3.begin(), f3.end(), d3.begin(), 0.0);
  EXPECT_GT(std::fabs(lhs), 0.1);
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::fabs(lhs));
  EXPECT_GT(std::inner_product(d3.begin(), d3.end(), d3.begin(), 0.0), 0.0) << "some RoIs pool from P3";
}

TEST(CpuDetectionLosses, HandValues) {
  cpu::ClassSelection plain;
  plain.groups = 3;
  const std::vector<float> x = {0, 2, -1}, t = {1, 0, 0}, w = {1, 0.5f, 2};
  const double bce = std::log(2.0) + 0.5 * (2 + std::log1p(std::exp(-2.0))) + 2 * std::log1p(std::exp(-1.0));
  EXPECT_NEAR(cpu::bce_with_logits_forward(x.data(), t.data(), w.data(), nullptr, plain), bce, 1e-6);
  std::vector<float> dx(3);
  cpu::bce_with_logits_backward(x.data(), t.data(), w.data(), nullptr, dx.data(), plain, 2.0f);
  EXPECT_NEAR(dx[0], 2 * (0.5 - 1), 1e-6);
  EXPECT_NEAR(dx[1], 2 * 0.5 / (1 + std::exp(-2.0)), 1e-6);
  // Smooth L1, beta 1: |d| = 1 is not < beta: 1 - 0.5 = 0.5; d = 2: 1.5; d = -1: 0.5.
  EXPECT_NEAR(cpu::smooth_l1_forward(x.data(), t.data(), w.data(), nullptr, plain, 1.0f), 0.5 + 0.5 * 1.5 + 2 * 0.5, 1e-6);
  // Class columns: x (2 groups, 1 row, 3 classes, 2 inner); group 0 reads class 2, group 1 class 0.
  cpu::ClassSelection s;
  s.groups = 2, s.rows = 1, s.classes = 3, s.inner = 2;
  const std::vector<float> xc = {9, 9, 9, 9, 0.5f, -3, 1, 1, 9, 9, 9, 9}, tc = {0, 0, 0, 0}, wc = {1, 1, 1, 0};
  const std::vector<int32_t> columns = {2, 0};
  EXPECT_NEAR(cpu::smooth_l1_forward(xc.data(), tc.data(), wc.data(), columns.data(), s, 1.0f), 0.125 + 2.5 + 0.5, 1e-6);
  std::vector<float> dxc(12, 7.0f);
  cpu::smooth_l1_backward(xc.data(), tc.data(), wc.data(), columns.data(), dxc.data(), s, 1.0f, 1.0f);
  EXPECT_EQ(dxc, (std::vector<float>{0, 0, 0, 0, 0.5f, -1, 1, 0, 0, 0, 0, 0}));
}

TEST(CpuAnchors, TorchvisionBaseAnchorsShiftedByStride) {
  cpu::AnchorLevel level;
  level.height = 1, level.width = 2, level.stride_h = level.stride_w = 4, level.size = 32;
  std::vector<float> anchors(2 * 3 * 4);
  cpu::anchor_grid(&level, 1, anchors.data());
  // ratio 0.5: w = 32 sqrt(2) = 45.25, h = 22.63, halves 22.6 and 11.3 -> round 23, 11.
  EXPECT_EQ(anchors, (std::vector<float>{-23, -11, 23, 11, -16, -16, 16, 16, -11, -23, 11, 23,  //
                                         -19, -11, 27, 11, -12, -16, 20, 16, -7, -23, 15, 23}));
}

TEST(CpuNms, BitmaskAndGreedyPass) {
  // Sorted by score: A, B = A shifted by 1 (IoU 81 / 119 = 0.68), C apart, D = A (suppressed by A), E invalid.
  const std::vector<float> boxes = {0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30, 0, 0, 10, 10, 40, 40, 41, 41};
  EXPECT_NEAR(detection::box_iou(&boxes[0], &boxes[4]), 81.0 / 119.0, 1e-6);
  std::vector<uint64_t> mask(5);
  cpu::nms_bitmask(boxes.data(), 5, 0.5f, mask.data());
  EXPECT_EQ(mask, (std::vector<uint64_t>{0b01010, 0b01000, 0, 0, 0}));
  const std::vector<uint8_t> valid = {1, 1, 1, 1, 0};
  std::vector<uint8_t> keep(5);
  cpu::nms_reduce(mask.data(), valid.data(), 5, keep.data());
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0, 1, 0, 0}));
  cpu::nms_bitmask(boxes.data(), 5, 0.7f, mask.data());  // 0.68 <= 0.7: B survives
  cpu::nms_reduce(mask.data(), nullptr, 5, keep.data());
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 1, 0, 1}));
}

TEST(CpuProposals, SurvivorsByScoreThenSuppressedAsPadding) {
  // One level of 5 anchors, one image. Logits rank A1 > A0 > A2 > A3 > A4; top 4 go to NMS (A4 is not a
  // candidate). A0 overlaps A1 (0.68 > 0.5) and A3 equals A0: both suppressed by A1 and come last as padding.
  const std::vector<float> anchors = {0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30, 0, 0, 10, 10, 50, 50, 60, 60};
  const std::vector<float> logits = {1, 2, 0, -1, -2}, deltas(5 * 4, 0.0f);
  cpu::ProposalGeometry g;
  g.batch = 1, g.anchors = 5, g.levels = 1, g.level_anchors[0] = 5, g.pre_nms_top_n = 4, g.post_nms_top_n = 4;
  g.nms_threshold = 0.5f, g.image_height = g.image_width = 64;
  std::vector<int32_t> top(4);
  cpu::top_k_per_level(logits.data(), g, top.data());
  EXPECT_EQ(top, (std::vector<int32_t>{1, 0, 2, 3}));
  std::vector<float> proposals(16);
  std::vector<int32_t> source(4);
  cpu::rpn_proposals(logits.data(), deltas.data(), anchors.data(), g, proposals.data(), source.data());
  EXPECT_EQ(source, (std::vector<int32_t>{1, 2, 0, 3}));
  EXPECT_EQ(std::vector<float>(proposals.begin(), proposals.begin() + 4), (std::vector<float>{1, 1, 11, 11}));
  // Decoding: dx = 0.1 moves A2's centre by 1 pixel, dw = log 2 doubles its width; clipped to the image.
  std::vector<float> d2 = deltas;
  d2[2 * 4 + 0] = 0.1f, d2[2 * 4 + 2] = std::log(2.0f);
  g.image_width = 35;
  cpu::rpn_proposals(logits.data(), d2.data(), anchors.data(), g, proposals.data(), source.data());
  EXPECT_NEAR(proposals[4], 16, 1e-4);
  EXPECT_NEAR(proposals[6], 35, 1e-6) << "36 clipped to the image";
}

TEST(CpuDetectionTargets, AnchorLabelsWeightsAndDeltas) {
  // Box (0, 0, 10, 10). A0 equals it (IoU 1: positive); A1 (0, 0, 10, 20) has IoU 0.5 (ignored, not the
  // box's best); A2 is far (negative). Sampled: 1 positive + 1 negative, each weighted 1 / (1 image · 2).
  const std::vector<float> anchors = {0, 0, 10, 10, 0, 0, 10, 20, 30, 30, 40, 40}, boxes = {0, 0, 10, 10};
  const std::vector<int32_t> ids = {7};
  cpu::RpnTargetGeometry g;
  g.batch = 1, g.anchors = 3, g.boxes = 1;
  std::vector<float> labels(3), weights(3), targets(12), box_weights(12);
  cpu::rpn_targets(anchors.data(), boxes.data(), ids.data(), 0, g, labels.data(), weights.data(), targets.data(),
                   box_weights.data());
  EXPECT_EQ(labels, (std::vector<float>{1, 0, 0}));
  EXPECT_EQ(weights, (std::vector<float>{0.5f, 0, 0.5f}));
  EXPECT_EQ(targets, std::vector<float>(12, 0.0f));
  EXPECT_EQ(box_weights, (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(CpuDetectionTargets, RoiSamplingCapsPositivesAndEncodesTargets) {
  // Candidates: p0 = the box (IoU 1), p1 = (0, 0, 10, 20) (IoU 0.5: foreground), p2 far, then the box itself.
  // 4 RoIs, at most 2 positive: 2 positives, the one negative, then the third positive fills the last slot.
  const std::vector<float> proposals = {0, 0, 10, 10, 0, 0, 10, 20, 30, 30, 40, 40}, boxes = {0, 0, 10, 10};
  const std::vector<int32_t> classes = {5}, ids = {3};
  cpu::RoiSampleGeometry g;
  g.batch = 1, g.proposals = 3, g.boxes = 1, g.rois_per_image = 4, g.mask_rois_per_image = 3;
  g.positive_fraction = 0.5f;
  std::vector<float> rois(20), targets(16), weights(16), mask_rois(15), mask_weights(3);
  std::vector<int32_t> labels(4), sampled(4), mask_labels(3), mask_boxes(3);
  const cpu::RoiSampleOutputs out{rois.data(), labels.data(), targets.data(), weights.data(), sampled.data(),
                                  mask_rois.data(), mask_labels.data(), mask_boxes.data(), mask_weights.data()};
  cpu::roi_sample(proposals.data(), boxes.data(), classes.data(), ids.data(), 0, g, out);
  EXPECT_EQ(labels, (std::vector<int32_t>{5, 5, 0, 5}));
  EXPECT_EQ(sampled[2], 2);
  EXPECT_EQ(std::set<int32_t>({sampled[0], sampled[1], sampled[3]}), (std::set<int32_t>{0, 1, 3}));
  for (int r = 0; r < 4; ++r) {
    const float w = r == 2 ? 0.0f : 0.25f;
    EXPECT_EQ(weights[size_t(r * 4)], w) << r;
    if (sampled[size_t(r)] == 1) {  // (10, 10, 5, 5)-weighted deltas from (0, 0, 10, 20) to the box
      EXPECT_NEAR(targets[size_t(r * 4 + 1)], -2.5f, 1e-6);
      EXPECT_NEAR(targets[size_t(r * 4 + 3)], 5 * std::log(0.5f), 1e-5);
    }
  }
  // Mask RoIs: the first two RoIs (the sampled positives), the third repeats the first with weight 0.
  EXPECT_EQ(mask_weights, (std::vector<float>{0.5f, 0.5f, 0}));
  EXPECT_EQ(std::vector<float>(mask_rois.begin(), mask_rois.begin() + 10), std::vector<float>(rois.begin(), rois.begin() + 10));
  EXPECT_EQ(mask_labels, (std::vector<int32_t>{5, 5, 5}));
  EXPECT_EQ(mask_boxes, (std::vector<int32_t>{0, 0, 0}));
  // The same step replays the same draw.
  std::vector<int32_t> again(4);
  cpu::RoiSampleOutputs replay = out;
  replay.sampled = again.data();
  cpu::roi_sample(proposals.data(), boxes.data(), classes.data(), ids.data(), 0, g, replay);
  EXPECT_EQ(again, sampled);
}

TEST(CpuDetectionTargets, MaskTargetsRasteriseTheInscribedEllipse) {
  // A RoI equal to its box (0, 0, 28, 28) at resolution 28: cell centres (j + 0.5, i + 0.5), inside the circle of
  // radius 14 around (14, 14). Corners out, centre in; the count is that of the lattice points in the circle.
  const std::vector<float> roi = {0, 0, 0, 28, 28}, boxes = {0, 0, 28, 28}, roi_weight = {0.5f};
  const std::vector<int32_t> matched = {0};
  std::vector<float> targets(28 * 28), weights(28 * 28);
  cpu::mask_targets(roi.data(), matched.data(), roi_weight.data(), boxes.data(), 1, 1, 28, targets.data(), weights.data());
  int inside = 0;
  for (int i = 0; i < 28; ++i) {
    for (int j = 0; j < 28; ++j) {
      const double u = (j + 0.5 - 14) / 14, v = (i + 0.5 - 14) / 14;
      inside += u * u + v * v <= 1;
      EXPECT_EQ(targets[size_t(i * 28 + j)], u * u + v * v <= 1 ? 1.0f : 0.0f) << i << "," << j;
    }
  }
  EXPECT_GT(inside, 500);
  EXPECT_LT(inside, 28 * 28);
  EXPECT_FLOAT_EQ(weights[0], 0.5f / 784);
}

}  // namespace
}  // namespace sb
