// Mask R-CNN's ops through the graph on the CPU device: builder checks, finite-difference gradients of
// FrozenBatchNorm (fused ReLU), multi-scale RoIAlign (into both pyramid levels) and the two weighted losses
// (with class columns), a frozen stage that gets no backward pass, and the forward-only detection steps giving
// what their sb::cpu references give. Run: unit_tests --gtest_filter='EngineDetection*'.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "src/cpu/detection_targets.h"
#include "src/cpu/proposals.h"
#include "tests/support/tensor_compare.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

struct OpGraph : test::OpGraph {
  OpGraph() { seed = 2100; }
};

TEST(EngineDetection, BuilderChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 4, 4, 3});
  EXPECT_THROW(b.frozen_affine(x, b.parameter("trained_scale", {3}), b.input("shift", {3}), true), UsageError);
  EXPECT_THROW(b.frozen_affine(x, b.input("short", {2}), b.input("shift2", {3}), true), UsageError);
  const TensorId frozen = b.frozen_parameter("frozen.weight", {5, 3});
  EXPECT_EQ(graph.tensor(frozen).role, TensorRole::kInput);
  EXPECT_EQ(graph.frozen_parameter_count(), 15);
  EXPECT_EQ(graph.parameter_count(), 3);
  const TensorId p2 = b.input("p2", {2, 8, 8, 4}), p3 = b.input("p3", {2, 4, 4, 4}), rois = b.input("rois", {6, 5});
  EXPECT_THROW(b.roi_align({p3, p2}, rois, 7, 32), UsageError) << "levels must go from fine to coarse";
  EXPECT_THROW(b.roi_align({p2, p3}, b.input("rois4", {6, 4}), 7, 32), UsageError);
  EXPECT_EQ(graph.tensor(b.roi_align({p2, p3}, rois, 7, 32)).shape, (std::vector<int64_t>{6, 7, 7, 4}));
  EXPECT_EQ(graph.nodes().back().attributes.at("first_level"), 2);
  const TensorId logits = b.input("logits", {6, 81 * 4}), targets = b.input("t", {6, 4}), w = b.input("w", {6, 4});
  EXPECT_THROW(b.smooth_l1_loss(logits, targets, w, 1.0), UsageError) << "324 columns need a class selection";
  const TensorId labels = b.input("labels", {6}, DType::kInt32);
  EXPECT_NO_THROW(b.smooth_l1_loss(logits, targets, w, 1.0, ClassColumns{labels, 81, 4}));
  EXPECT_THROW(b.smooth_l1_loss(logits, targets, w, 1.0, ClassColumns{labels, 80, 4}), UsageError);
  EXPECT_THROW(b.smooth_l1_loss(targets, targets, w, 0.0), UsageError);
  const TensorId anchors = b.anchor_grid({{8, 8, 32, 32, 32}, {4, 4, 32, 32, 64}});
  EXPECT_EQ(graph.tensor(anchors).shape, (std::vector<int64_t>{240, 4}));
  const TensorId objectness = b.input("objectness", {2, 240}), deltas = b.input("deltas", {2, 240, 4});
  EXPECT_THROW(b.rpn_proposals(objectness, deltas, anchors, {192, 40}, 32, 32), UsageError) << "232 != 240";
  ProposalOptions too_many;
  too_many.pre_nms_top_n = 10, too_many.post_nms_top_n = 21;
  EXPECT_THROW(b.rpn_proposals(objectness, deltas, anchors, {192, 48}, 32, 32, too_many), UsageError);
  EXPECT_THROW(b.rpn_proposals(objectness, deltas, anchors, {192, 48}, 32, 32), UsageError) << "2000 of 240";
  ProposalOptions fits;
  fits.post_nms_top_n = 100;
  const Proposals p = b.rpn_proposals(objectness, deltas, anchors, {192, 48}, 32, 32, fits);
  EXPECT_EQ(graph.tensor(p.boxes).shape, (std::vector<int64_t>{2, 100, 4}));
  EXPECT_EQ(graph.tensor(p.source).dtype, DType::kInt32);
}

// FrozenBatchNorm with its ReLU between two trained convolutions: gradients reach the first conv through dy · scale.
TEST(EngineDetection, FrozenAffineGradientsMatchFiniteDifferences) {
  OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 5, 3});
  const TensorId y = t.b.conv2d(x, t.parameter("w1", {4, 3, 3, 3}, 0.3f), kNoTensor, Conv2dOptions::with(1, 1));
  const TensorId scale = t.float_input("scale", {4}, {0.5f, -1.5f, 2.0f, 1.0f});
  const TensorId shift = t.float_input("shift", {4}, {0.1f, 0.2f, -0.3f, 0.0f});
  const TensorId z = t.b.frozen_affine(y, scale, shift, true);
  t.finish(t.b.conv2d(z, t.parameter("w2", {3, 1, 1, 4}, 0.5f)));
  t.expect_gradients_match();
}

// A frozen stem (weights are inputs) below a trained layer: no pass computes a gradient below the trained layer.
TEST(EngineDetection, FrozenStageGetsNoBackwardPass) {
  OpGraph t;
  const TensorId image = t.float_input("image", {1, 4, 4, 2}, test::random_normal(32, 1));
  const TensorId stem = t.b.conv2d(image, t.b.frozen_parameter("stem.weight", {3, 3, 3, 2}), kNoTensor,
                                   Conv2dOptions::with(1, 1));
  const TensorId frozen = t.b.frozen_affine(stem, t.float_input("s", {3}, {1, 1, 1}), t.float_input("b", {3}, {0, 0, 0}), true);
  const TensorId pooled = t.b.max_pool2d(frozen, 2, Conv2dOptions::with(2, 0));
  t.finish(t.b.conv2d(pooled, t.parameter("head", {2, 1, 1, 3})));
  int data_passes = 0, filter_passes = 0, other = 0;
  for (const Node& node : t.graph.nodes()) {
    if (!node.backward) continue;
    data_passes += node.op == "conv2d_backward_data";
    filter_passes += node.op == "conv2d_backward_filter";
    other += node.op == "max_pool2d_backward" || node.op == "frozen_affine_backward";
  }
  EXPECT_EQ(data_passes, 0);
  EXPECT_EQ(filter_passes, 1);
  EXPECT_EQ(other, 0);
}

// RoIs of several sizes over two levels (P2 8 x 8, P3 4 x 4 of a 32-pixel image): some pool from P3.
TEST(EngineDetection, RoiAlignGradientsMatchFiniteDifferences) {
  OpGraph t;
  const TensorId p2 = t.parameter("p2", {2, 8, 8, 3}), p3 = t.parameter("p3", {2, 4, 4, 3});
  const TensorId rois = t.float_input("rois", {4, 5}, {0, 2, 3, 20, 14, 1, 0, 0, 31, 31, 1, 5, 5, 9, 7, 0, -30, -20, 140, 150});
  const TensorId pooled = t.b.roi_align({p2, p3}, rois, 3, 32);
  t.finish(pooled);
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);
  // The last RoI (170 x 170) pools from P3.
  double p3_gradient = 0;
  for (float v : t.read(t.gradients.at(p3))) p3_gradient += std::fabs(v);
  EXPECT_GT(p3_gradient, 0.0);
}

TEST(EngineDetection, LossGradientsMatchFiniteDifferences) {
  OpGraph t;
  // BCE over (3 groups, 2 rows, 4 classes, 1) at columns {3, 0, 2}; smooth L1 (beta 1/9) on a plain tensor.
  const TensorId logits = t.parameter("logits", {3, 2, 4});
  const TensorId targets = t.float_input("bce_t", {3, 2}, {1, 0, 0, 1, 1, 1});
  const TensorId weights = t.float_input("bce_w", {3, 2}, {0.5f, 0.25f, 1, 0, 2, 0.125f});
  const TensorId columns = t.int_input("columns", {3}, {3, 0, 2});
  const TensorId bce = t.b.bce_with_logits_loss(logits, targets, weights, ClassColumns{columns, 4, 1});
  const TensorId deltas = t.parameter("deltas", {5, 4}, 0.5f);
  const TensorId l1 = t.b.smooth_l1_loss(deltas, t.float_input("l1_t", {5, 4}, test::random_normal(20, 4, 0.5f)),
                                         t.float_input("l1_w", {5, 4}, std::vector<float>(20, 0.3f)), 1.0 / 9);
  t.finish_with_loss(t.b.add_losses(bce, l1, 2.0));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, 1e-3);
}

// anchor_grid -> rpn_proposals -> roi_sample -> mask_targets through the executor, against the references.
TEST(EngineDetection, DetectionStepsGiveTheReferencesResults) {
  OpGraph t;
  const std::vector<AnchorLevelSpec> levels = {{8, 8, 32, 32, 16}, {4, 4, 32, 32, 32}};
  const TensorId anchors = t.b.anchor_grid(levels);
  const TensorId objectness = t.parameter("objectness", {2, 240}), deltas = t.parameter("deltas", {2, 240, 4}, 0.2f);
  ProposalOptions po;
  po.pre_nms_top_n = 30, po.post_nms_top_n = 40;
  const Proposals p = t.b.rpn_proposals(objectness, deltas, anchors, {192, 48}, 32, 32, po);
  const TensorId boxes = t.float_input("gt", {2, 2, 4}, {2, 2, 14, 20, 10, 4, 30, 12, 0, 0, 31, 31, 5, 6, 9, 12});
  const TensorId classes = t.int_input("classes", {2, 2}, {3, 1, 2, 3});
  const TensorId ids = t.int_input("ids", {2}, {11, 12});
  RoiSampleOptions so;
  so.rois_per_image = 16, so.mask_rois_per_image = 4;
  const RoiSamples s = t.b.roi_sample(p.boxes, boxes, classes, ids, so);
  const MaskTargets m = t.b.mask_targets(s, boxes, 6);
  const RpnTargets r = t.b.rpn_targets(anchors, boxes, ids);
  const TensorId features = t.parameter("features", {2, 8, 8, 4});
  const TensorId pooled = t.b.roi_align({features}, s.mask_rois, 6, 32);
  const TensorId rpn = t.b.add_losses(t.b.bce_with_logits_loss(objectness, r.labels, r.label_weights),
                                      t.b.smooth_l1_loss(deltas, r.box_targets, r.box_weights, 1.0 / 9));
  const TensorId mask_loss = t.b.bce_with_logits_loss(pooled, m.targets, m.weights, ClassColumns{s.mask_labels, 4, 1});
  for (TensorId id : {anchors, p.boxes, p.source, s.rois, s.labels, m.targets, r.labels}) t.graph.tensor(id).read_after_step = true;
  t.finish_with_loss(t.b.add_losses(rpn, mask_loss));
  t.e->run();
  ASSERT_TRUE(std::isfinite(*t.e->f32(t.loss)));
  // The references on the same inputs.
  std::vector<cpu::AnchorLevel> al(2);
  al[0] = {8, 8, 4, 4, 16}, al[1] = {4, 4, 8, 8, 32};
  std::vector<float> want_anchors(240 * 4);
  cpu::anchor_grid(al.data(), 2, want_anchors.data());
  EXPECT_EQ(t.read(anchors), want_anchors);
  cpu::ProposalGeometry g;
  g.batch = 2, g.anchors = 240, g.levels = 2, g.level_anchors[0] = 192, g.level_anchors[1] = 48;
  g.pre_nms_top_n = 30, g.post_nms_top_n = 40, g.image_height = g.image_width = 32;
  std::vector<float> want_boxes(2 * 40 * 4);
  std::vector<int32_t> want_source(80);
  cpu::rpn_proposals(t.values(objectness).data(), t.values(deltas).data(), want_anchors.data(), g, want_boxes.data(),
                     want_source.data());
  EXPECT_EQ(t.read(p.boxes), want_boxes);
  EXPECT_EQ(std::memcmp(t.e->i32(p.source), want_source.data(), 80 * sizeof(int32_t)), 0);
  const std::vector<float> labels = t.read(r.labels);
  EXPECT_GT(std::count(labels.begin(), labels.end(), 1.0f), 0) << "every box has a best anchor";
  const std::vector<float> mask = t.read(m.targets);
  EXPECT_GT(std::count(mask.begin(), mask.end(), 1.0f), 0);
  EXPECT_GT(std::count(mask.begin(), mask.end(), 0.0f), 0);
}

}  // namespace
}  // namespace sb
