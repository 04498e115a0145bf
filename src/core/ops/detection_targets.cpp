// The detection-targets family (src/core/ops/detection_targets.h): GraphBuilder::rpn_targets, roi_sample and
// mask_targets, their (detached) rules and their ops' rows. Kernels: src/cpu/detection_targets.cpp,
// src/cuda/detection_targets.cu.
#include "src/core/ops/detection_targets.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_checks.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const MaskTargetParams& p) {
  return {{"rois", double(p.rois)}, {"boxes", double(p.boxes)}, {"resolution", double(p.resolution)}};
}

MaskTargetParams mask_target_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "rois")), static_cast<int64_t>(ops::attribute(node, "boxes")),
          static_cast<int64_t>(ops::attribute(node, "resolution"))};
}

RpnTargets GraphBuilder::rpn_targets(TensorId anchors, TensorId gt_boxes, TensorId sample_ids,
                                     const RpnTargetOptions& options) {
  const std::vector<int64_t> as = shape(anchors), gs = shape(gt_boxes);
  if (as.size() != 2 || as[1] != 4 || gs.size() != 3 || gs[2] != 4 || gs[1] < 1) {
    throw UsageError("rpn_targets: anchors (A, 4) and ground truth (N, B >= 1, 4), got " + shape_text(as) + " and " +
                     shape_text(gs));
  }
  ops::require_dtype(graph_.tensor(gt_boxes), DType::kFloat32, "rpn_targets");
  ops::require_dtype(graph_.tensor(sample_ids), DType::kInt32, "rpn_targets");
  ops::require_shape(graph_.tensor(sample_ids), {gs[0]}, "rpn_targets");
  const int64_t batch = gs[0], a_count = as[0];
  RpnTargets t;
  t.labels = activation(next_name("rpn_labels"), {batch, a_count}, DType::kFloat32);
  t.label_weights = activation(next_name("rpn_label_weights"), {batch, a_count}, DType::kFloat32);
  t.box_targets = activation(next_name("rpn_box_targets"), {batch, a_count, 4}, DType::kFloat32);
  t.box_weights = activation(next_name("rpn_box_weights"), {batch, a_count, 4}, DType::kFloat32);
  graph_.add_node(Node{"rpn_targets",
                       {anchors, gt_boxes, sample_ids},
                       {t.labels, t.label_weights, t.box_targets, t.box_weights},
                       {{"batch", double(batch)}, {"anchors", double(a_count)}, {"boxes", double(gs[1])},
                        {"sampled_per_image", double(options.sampled_per_image)},
                        {"positive_fraction", options.positive_fraction},
                        {"foreground_iou", options.foreground_iou}, {"background_iou", options.background_iou}},
                       false});
  return t;
}

RoiSamples GraphBuilder::roi_sample(TensorId proposals, TensorId gt_boxes, TensorId gt_classes, TensorId sample_ids,
                                    const RoiSampleOptions& options) {
  const std::vector<int64_t> ps = shape(proposals), gs = shape(gt_boxes);
  if (ps.size() != 3 || ps[2] != 4 || gs.size() != 3 || gs[2] != 4 || gs[0] != ps[0] || gs[1] < 1) {
    throw UsageError("roi_sample: proposals (N, P, 4) and ground truth (N, B >= 1, 4), got " + shape_text(ps) +
                     " and " + shape_text(gs));
  }
  const int64_t batch = ps[0], r = options.rois_per_image, m = options.mask_rois_per_image;
  ops::require_dtype(graph_.tensor(proposals), DType::kFloat32, "roi_sample");
  ops::require_dtype(graph_.tensor(gt_boxes), DType::kFloat32, "roi_sample");
  ops::require_dtype(graph_.tensor(gt_classes), DType::kInt32, "roi_sample");
  ops::require_shape(graph_.tensor(gt_classes), {batch, gs[1]}, "roi_sample");
  ops::require_dtype(graph_.tensor(sample_ids), DType::kInt32, "roi_sample");
  ops::require_shape(graph_.tensor(sample_ids), {batch}, "roi_sample");
  const int64_t max_positives = static_cast<int64_t>(static_cast<float>(r) * static_cast<float>(options.positive_fraction));
  if (r < 1 || m < 1 || max_positives < 1 || m > r) {
    throw UsageError("roi_sample: needs >= 1 positive RoI per image and mask RoIs <= RoIs");
  }
  if (ps[1] + gs[1] > 8192) throw UsageError("roi_sample: at most 8192 candidates per image (proposals + boxes)");
  RoiSamples s;
  s.rois = activation(next_name("rois"), {batch * r, 5}, DType::kFloat32);
  s.labels = activation(next_name("roi_labels"), {batch * r}, DType::kInt32);
  s.box_targets = activation(next_name("roi_box_targets"), {batch * r, 4}, DType::kFloat32);
  s.box_weights = activation(next_name("roi_box_weights"), {batch * r, 4}, DType::kFloat32);
  s.sampled = activation(next_name("roi_sampled"), {batch * r}, DType::kInt32);
  s.mask_rois = activation(next_name("mask_rois"), {batch * m, 5}, DType::kFloat32);
  s.mask_labels = activation(next_name("mask_labels"), {batch * m}, DType::kInt32);
  s.mask_boxes = activation(next_name("mask_boxes"), {batch * m}, DType::kInt32);
  s.mask_weights = activation(next_name("mask_weights"), {batch * m}, DType::kFloat32);
  graph_.add_node(Node{"roi_sample",
                       {proposals, gt_boxes, gt_classes, sample_ids},
                       {s.rois, s.labels, s.box_targets, s.box_weights, s.sampled, s.mask_rois, s.mask_labels,
                        s.mask_boxes, s.mask_weights},
                       {{"batch", double(batch)}, {"proposals", double(ps[1])}, {"boxes", double(gs[1])},
                        {"rois_per_image", double(r)}, {"mask_rois_per_image", double(m)},
                        {"positive_fraction", options.positive_fraction}, {"foreground_iou", options.foreground_iou}},
                       false});
  return s;
}

MaskTargets GraphBuilder::mask_targets(const RoiSamples& samples, TensorId gt_boxes, int64_t resolution) {
  const std::vector<int64_t> gs = shape(gt_boxes);
  if (gs.size() != 3 || gs[2] != 4 || resolution < 1) {
    throw UsageError("mask_targets: ground truth (N, B, 4) and a resolution >= 1, got " + shape_text(gs));
  }
  const int64_t q = graph_.tensor(samples.mask_labels).elements();
  MaskTargets t;
  t.targets = activation(next_name("mask_targets"), {q, resolution, resolution}, DType::kFloat32);
  t.weights = activation(next_name("mask_target_weights"), {q, resolution, resolution}, DType::kFloat32);
  graph_.add_node(Node{"mask_targets",
                       {samples.mask_rois, samples.mask_boxes, samples.mask_weights, gt_boxes},
                       {t.targets, t.weights},
                       encode(MaskTargetParams{q, gs[1], resolution}),
                       false});
  return t;
}

namespace {

// Detached (OpDef::detached): the rule says explicitly that no gradient flows to any input.
std::vector<detail::Contribution> detached(detail::BackwardContext&, const Node& node, const std::vector<TensorId>&) {
  return std::vector<detail::Contribution>(node.inputs.size());
}

}  // namespace

const OpDefs& detection_targets_ops() {
  // Forward-only: the targets are data for the losses, detached from the boxes they are computed from.
  static const OpDefs ops = {
      {"rpn_targets", "detection_targets", OpGradient::kStopsGradient, detached, true},
      {"roi_sample", "detection_targets", OpGradient::kStopsGradient, detached, true},
      {"mask_targets", "detection_targets", OpGradient::kStopsGradient, detached, true},
  };
  return ops;
}

}  // namespace sb
