// GraphBuilder's Mask R-CNN ops (include/scalebench/graph_builder.h, detection_options.h):
// FrozenBatchNorm (its weights are frozen_parameter() inputs), multi-scale RoIAlign, the two weighted losses, and the forward-only detection steps (anchors,
// proposals, target assignment, mask targets). Every count is static: proposals, sampled RoIs and mask RoIs per
// image are fixed by the options, so no shape depends on the data. Sizes are stored as node attributes
// (read back by src/engine/detection_geometry.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

void require_dtype(const TensorInfo& info, DType dtype, const std::string& op) {
  if (info.dtype != dtype) {
    throw UsageError(op + ": '" + info.name + "' must be " + dtype_name(dtype) + ", got " + dtype_name(info.dtype));
  }
}

void require_shape(const TensorInfo& info, const std::vector<int64_t>& shape, const std::string& op) {
  if (info.shape != shape) {
    throw UsageError(op + ": '" + info.name + "' must be " + shape_text(shape) + ", got " + shape_text(info.shape));
  }
}

}  // namespace

TensorId GraphBuilder::frozen_affine(TensorId x, TensorId scale, TensorId shift, bool relu) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.empty()) throw UsageError("frozen_affine: x must have a channel dimension");
  const int64_t channels = xs.back();
  for (TensorId t : {scale, shift}) {
    const TensorInfo& info = graph_.tensor(t);
    require_dtype(info, DType::kFloat32, "frozen_affine");
    require_shape(info, {channels}, "frozen_affine");
    if (info.role != TensorRole::kInput) throw UsageError("frozen_affine: '" + info.name + "' must be an input (frozen)");
  }
  const TensorId y = activation(next_name("frozen_affine"), xs);
  graph_.add_node(Node{"frozen_affine", {x, scale, shift}, {y},
                       {{"rows", double(graph_.tensor(x).elements() / channels)},
                        {"channels", double(channels)},
                        {"relu", relu ? 1.0 : 0.0}},
                       false});
  return y;
}

TensorId GraphBuilder::roi_align(const std::vector<TensorId>& levels, TensorId rois, int64_t output_size,
                                 int64_t image_height, int64_t sampling_ratio, bool aligned) {
  if (levels.empty() || levels.size() > 4) throw UsageError("roi_align: 1 to 4 feature levels");
  if (output_size < 1 || sampling_ratio < 1 || image_height < 1) {
    throw UsageError("roi_align: output size, sampling ratio and image height must be >= 1");
  }
  const TensorInfo& ri = graph_.tensor(rois);
  require_dtype(ri, DType::kFloat32, "roi_align");
  if (ri.shape.size() != 2 || ri.shape[1] != 5) throw UsageError("roi_align: rois must be (R, 5), got " + shape_text(ri.shape));
  Node node{"roi_align", {}, {}, {}, false};
  int64_t batch = 0, channels = 0;
  int first_level = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    const TensorId level = in_compute_dtype(levels[l]);
    const std::vector<int64_t> ls = shape(level);
    if (ls.size() != 4 || (l > 0 && (ls[0] != batch || ls[3] != channels))) {
      throw UsageError("roi_align: levels must be (N, H, W, C) alike in N and C, got " + shape_text(ls));
    }
    batch = ls[0], channels = ls[3];
    // torchvision's MultiScaleRoIAlign: scale = 2^round(log2(H / image height)).
    const int k = static_cast<int>(std::lround(std::log2(double(image_height) / double(ls[1]))));
    if (l == 0) first_level = k;
    if (k != first_level + static_cast<int>(l)) {
      throw UsageError("roi_align: level " + std::to_string(l) + " (" + shape_text(ls) + ") is not at stride 2^" +
                       std::to_string(first_level + l) + " of a " + std::to_string(image_height) + "-pixel image");
    }
    node.inputs.push_back(level);
    node.attributes["h" + std::to_string(l)] = double(ls[1]);
    node.attributes["w" + std::to_string(l)] = double(ls[2]);
  }
  node.inputs.push_back(rois);
  const int64_t r = ri.shape[0];
  node.outputs.push_back(activation(next_name("roi_align"), {r, output_size, output_size, channels}));
  node.attributes.insert({{"batch", double(batch)}, {"channels", double(channels)}, {"rois", double(r)},
                          {"output_size", double(output_size)}, {"sampling_ratio", double(sampling_ratio)},
                          {"levels", double(levels.size())}, {"first_level", double(first_level)},
                          {"aligned", aligned ? 1.0 : 0.0}});
  graph_.add_node(node);
  return node.outputs[0];
}

namespace {

// The ClassSelection attributes of a loss over x, targets, weights (and columns), checked.
NodeAttributes selection_attributes(const Graph& graph, TensorId x, TensorId targets, TensorId weights,
                                    const ClassColumns& selection, const std::string& op) {
  const TensorInfo& xi = graph.tensor(x);
  const TensorInfo& ti = graph.tensor(targets);
  const TensorInfo& wi = graph.tensor(weights);
  require_dtype(ti, DType::kFloat32, op);
  require_dtype(wi, DType::kFloat32, op);
  if (ti.elements() != wi.elements()) {
    throw UsageError(op + ": targets " + shape_text(ti.shape) + " and weights " + shape_text(wi.shape) + " differ in size");
  }
  int64_t groups = ti.elements(), rows = 1, classes = 1, inner = 1;
  if (selection.columns != kNoTensor) {
    const TensorInfo& ci = graph.tensor(selection.columns);
    require_dtype(ci, DType::kInt32, op);
    groups = ci.elements(), classes = selection.classes, inner = selection.inner;
    if (classes < 1 || inner < 1 || ti.elements() % (groups * inner) != 0) {
      throw UsageError(op + ": targets " + shape_text(ti.shape) + " are not (" + std::to_string(groups) + ", rows, " +
                       std::to_string(inner) + ")");
    }
    rows = ti.elements() / (groups * inner);
  }
  if (xi.elements() != groups * rows * classes * inner) {
    throw UsageError(op + ": x " + shape_text(xi.shape) + " is not (" + std::to_string(groups) + ", " +
                     std::to_string(rows) + ", " + std::to_string(classes) + ", " + std::to_string(inner) + ")");
  }
  return {{"groups", double(groups)}, {"rows", double(rows)}, {"classes", double(classes)}, {"inner", double(inner)}};
}

}  // namespace

TensorId GraphBuilder::bce_with_logits_loss(TensorId x, TensorId targets, TensorId weights,
                                            const ClassColumns& selection) {
  x = in_compute_dtype(x);
  Node node{"bce_with_logits_loss", {x, targets, weights}, {}, selection_attributes(graph_, x, targets, weights, selection, "bce_with_logits_loss"), false};
  if (selection.columns != kNoTensor) node.inputs.push_back(selection.columns);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  node.outputs.push_back(loss);
  graph_.add_node(node);
  return loss;
}

TensorId GraphBuilder::smooth_l1_loss(TensorId x, TensorId targets, TensorId weights, double beta,
                                      const ClassColumns& selection) {
  if (!(beta > 0)) throw UsageError("smooth_l1_loss: beta must be > 0");
  x = in_compute_dtype(x);
  Node node{"smooth_l1_loss", {x, targets, weights}, {}, selection_attributes(graph_, x, targets, weights, selection, "smooth_l1_loss"), false};
  node.attributes["beta"] = beta;
  if (selection.columns != kNoTensor) node.inputs.push_back(selection.columns);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  node.outputs.push_back(loss);
  graph_.add_node(node);
  return loss;
}

TensorId GraphBuilder::anchor_grid(const std::vector<AnchorLevelSpec>& levels) {
  if (levels.empty() || levels.size() > 5) throw UsageError("anchor_grid: 1 to 5 levels");
  NodeAttributes a{{"levels", double(levels.size())}};
  int64_t anchors = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    const AnchorLevelSpec& s = levels[l];
    if (s.height < 1 || s.width < 1 || s.image_height < s.height || s.image_width < s.width || !(s.size > 0)) {
      throw UsageError("anchor_grid: level " + std::to_string(l) + " needs a map no larger than the image and a size > 0");
    }
    const std::string k = std::to_string(l);
    a["h" + k] = double(s.height), a["w" + k] = double(s.width), a["size" + k] = s.size;
    a["stride_h" + k] = double(s.image_height / s.height), a["stride_w" + k] = double(s.image_width / s.width);
    anchors += s.height * s.width * 3;
  }
  const TensorId out = activation(next_name("anchors"), {anchors, 4}, DType::kFloat32);
  graph_.add_node(Node{"anchor_grid", {}, {out}, a, false});
  return out;
}

Proposals GraphBuilder::rpn_proposals(TensorId objectness, TensorId deltas, TensorId anchors,
                                      const std::vector<int64_t>& level_anchors, int64_t image_height,
                                      int64_t image_width, const ProposalOptions& options) {
  objectness = converted(objectness, DType::kFloat32);
  deltas = converted(deltas, DType::kFloat32);
  const std::vector<int64_t> os = shape(objectness);
  if (os.size() != 2) throw UsageError("rpn_proposals: objectness must be (N, A), got " + shape_text(os));
  const int64_t batch = os[0], a_count = os[1];
  require_shape(graph_.tensor(deltas), {batch, a_count, 4}, "rpn_proposals");
  require_shape(graph_.tensor(anchors), {a_count, 4}, "rpn_proposals");
  require_dtype(graph_.tensor(anchors), DType::kFloat32, "rpn_proposals");
  if (level_anchors.empty() || level_anchors.size() > 5) throw UsageError("rpn_proposals: 1 to 5 levels");
  NodeAttributes a{{"batch", double(batch)}, {"anchors", double(a_count)}, {"levels", double(level_anchors.size())},
                   {"pre_nms_top_n", double(options.pre_nms_top_n)}, {"post_nms_top_n", double(options.post_nms_top_n)},
                   {"nms_threshold", options.nms_threshold}, {"min_size", options.min_size},
                   {"image_height", double(image_height)}, {"image_width", double(image_width)},
                   {"decode", true_gradients_ ? 0.0 : 1.0}};
  int64_t total = 0, candidates = 0;
  for (size_t l = 0; l < level_anchors.size(); ++l) {
    a["a" + std::to_string(l)] = double(level_anchors[l]);
    total += level_anchors[l];
    candidates += std::min(level_anchors[l], options.pre_nms_top_n);
  }
  if (total != a_count) throw UsageError("rpn_proposals: the levels' anchors do not add up to " + std::to_string(a_count));
  if (options.pre_nms_top_n < 1 || options.post_nms_top_n < 1 || options.post_nms_top_n > candidates) {
    throw UsageError("rpn_proposals: " + std::to_string(options.post_nms_top_n) + " proposals from " +
                     std::to_string(candidates) + " candidates per image");
  }
  Proposals p;
  p.boxes = activation(next_name("proposals"), {batch, options.post_nms_top_n, 4}, DType::kFloat32);
  p.source = activation(next_name("proposal_anchors"), {batch, options.post_nms_top_n}, DType::kInt32);
  graph_.add_node(Node{"rpn_proposals", {objectness, deltas, anchors}, {p.boxes, p.source}, a, false});
  return p;
}

RpnTargets GraphBuilder::rpn_targets(TensorId anchors, TensorId gt_boxes, TensorId sample_ids,
                                     const RpnTargetOptions& options) {
  const std::vector<int64_t> as = shape(anchors), gs = shape(gt_boxes);
  if (as.size() != 2 || as[1] != 4 || gs.size() != 3 || gs[2] != 4 || gs[1] < 1) {
    throw UsageError("rpn_targets: anchors (A, 4) and ground truth (N, B >= 1, 4), got " + shape_text(as) + " and " +
                     shape_text(gs));
  }
  require_dtype(graph_.tensor(gt_boxes), DType::kFloat32, "rpn_targets");
  require_dtype(graph_.tensor(sample_ids), DType::kInt32, "rpn_targets");
  require_shape(graph_.tensor(sample_ids), {gs[0]}, "rpn_targets");
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
  require_dtype(graph_.tensor(proposals), DType::kFloat32, "roi_sample");
  require_dtype(graph_.tensor(gt_boxes), DType::kFloat32, "roi_sample");
  require_dtype(graph_.tensor(gt_classes), DType::kInt32, "roi_sample");
  require_shape(graph_.tensor(gt_classes), {batch, gs[1]}, "roi_sample");
  require_dtype(graph_.tensor(sample_ids), DType::kInt32, "roi_sample");
  require_shape(graph_.tensor(sample_ids), {batch}, "roi_sample");
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
                       {{"rois", double(q)}, {"boxes", double(gs[1])}, {"resolution", double(resolution)}},
                       false});
  return t;
}

}  // namespace sb
