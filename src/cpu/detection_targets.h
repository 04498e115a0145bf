// CPU references of Mask R-CNN's target assignment (sb::cpu): matching anchors and proposals to ground-truth boxes
// by IoU, sampling a fixed number of them with a fixed positive cap (torchvision's Matcher and
// BalancedPositiveNegativeSampler), their regression targets, and the 28 x 28 mask targets of the positives.
// Nothing here has a gradient. Random choices come from detection::random_bits keyed by (dataset sample, step,
// element), so they are the same on both devices and for any split of the batch over ranks.
// Ground truth: (batch, boxes, 4) boxes in pixels, every one real (the synthetic data has no padding), classes
// (batch, boxes) in 1 .. classes - 1; each box's instance mask is the ellipse inscribed in it.
// The CUDA device has the same names (src/cuda/detection_targets.h). Tests: tests/unit/test_cpu_detection_ops.cpp.
#pragma once

#include <cstdint>

#include "scalebench/host_device.h"
#include "src/core/ops/detection_targets.h"

namespace sb::cpu {

// Random streams of the two samplers (detection::random_bits).
constexpr uint32_t kRpnSamplerStream = 1, kRoiSamplerStream = 2;

// The geometries live with the family's graph-builder code (src/core/ops/detection_targets.h).
using sb::RoiSampleGeometry;
using sb::RpnTargetGeometry;

// Anchors (anchors, 4) matched to each image's boxes: positive at IoU >= 0.7 or when the anchor is (one of) a
// box's best (allow_low_quality_matches), negative below 0.3, else ignored. min(#positive, 128) positives and
// min(256 - that, #negative) negatives are drawn per image. Outputs (batch, anchors[, 4]): labels 1 / 0,
// label_weights 1 / (batch · sampled) on sampled anchors, box_targets (deltas to the matched box, weights 1) and
// box_weights 1 / (batch · sampled) on sampled positives, zero elsewhere.
void rpn_targets(const float* anchors, const float* gt_boxes, const int32_t* sample_ids, uint64_t step,
                 const RpnTargetGeometry& g, float* labels, float* label_weights, float* box_targets,
                 float* box_weights);

// Per image: the candidates (proposals then ground-truth boxes) matched to the boxes (foreground at IoU >= 0.5),
// min(#foreground, 128) positives and rois_per_image - that negatives drawn (if there are too few negatives, more
// positives fill the rest, then the drawn ones repeat). Outputs, rois_per_image per image, positives first:
//   rois (batch · R, 5) (image, box), labels (batch · R) class or 0, box_targets (batch · R, 4) deltas with weights
//   (10, 10, 5, 5), box_weights (batch · R, 4) 1 / (batch · R) on positives, sampled (batch · R) candidate index;
//   mask_rois_per_image (M) per image: the first min(M, positives) positives, the rest repeat the first one with
//   weight 0: mask_rois (batch · M, 5), mask_labels (batch · M), mask_boxes (batch · M) matched box index,
//   mask_weights (batch · M) 1 / (batch · real mask RoIs of the image).
struct RoiSampleOutputs {
  float* rois;
  int32_t* labels;
  float* box_targets;
  float* box_weights;
  int32_t* sampled;
  float* mask_rois;
  int32_t* mask_labels;
  int32_t* mask_boxes;
  float* mask_weights;
};
void roi_sample(const float* proposals, const float* gt_boxes, const int32_t* gt_classes, const int32_t* sample_ids,
                uint64_t step, const RoiSampleGeometry& g, const RoiSampleOutputs& out);

// targets (rois, resolution, resolution): 1 where the centre of the cell lies inside the matched box's ellipse;
// weights = mask_weights[roi] / resolution² (a mean over each RoI's pixels).
void mask_targets(const float* mask_rois, const int32_t* mask_boxes, const float* mask_weights, const float* gt_boxes,
                  int64_t rois, int64_t boxes, int64_t resolution, float* targets, float* weights);

}  // namespace sb::cpu
