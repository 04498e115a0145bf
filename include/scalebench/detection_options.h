// Settings and multi-tensor results of GraphBuilder's Mask R-CNN ops (graph_builder.h; src/core/ops/proposals.cpp,
// detection_targets.cpp). Defaults are torchvision's maskrcnn_resnet50_fpn training settings
// (shared/WORKLOADS.md §6).
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// A class-specific prediction read at one column per group: x viewed as (groups, rows, classes, inner), targets
// and weights (groups, rows, inner), int32 columns (groups). columns = kNoTensor: x, targets, weights alike.
struct ClassColumns {
  TensorId columns = kNoTensor;
  int64_t classes = 1, inner = 1;
};

struct AnchorLevelSpec {
  int64_t height = 0, width = 0;      // the level's feature map
  int64_t image_height = 0, image_width = 0;
  double size = 0;                    // anchor side at aspect ratio 1, pixels
};

struct ProposalOptions {
  int64_t pre_nms_top_n = 2000;   // per image and level
  int64_t post_nms_top_n = 2000;  // per image (torchvision; maskrcnn-benchmark's 2000 per batch is a known quirk)
  double nms_threshold = 0.7, min_size = 1e-3;
};
struct Proposals {
  TensorId boxes = kNoTensor;   // (N, post_nms_top_n, 4) fp32
  TensorId source = kNoTensor;  // (N, post_nms_top_n) int32 anchor index of each proposal
};

struct RpnTargetOptions {
  int64_t sampled_per_image = 256;
  double positive_fraction = 0.5, foreground_iou = 0.7, background_iou = 0.3;
};
struct RpnTargets {
  TensorId labels = kNoTensor, label_weights = kNoTensor;          // (N, A) fp32
  TensorId box_targets = kNoTensor, box_weights = kNoTensor;       // (N, A, 4) fp32
};

struct RoiSampleOptions {
  int64_t rois_per_image = 512, mask_rois_per_image = 64;
  double positive_fraction = 0.25, foreground_iou = 0.5;
};
struct RoiSamples {
  TensorId rois = kNoTensor;         // (N R, 5) fp32 (image, x1, y1, x2, y2), positives first per image
  TensorId labels = kNoTensor;       // (N R) int32 class, 0 = background
  TensorId box_targets = kNoTensor;  // (N R, 4) fp32
  TensorId box_weights = kNoTensor;  // (N R, 4) fp32
  TensorId sampled = kNoTensor;      // (N R) int32 candidate index (proposals, then ground-truth boxes)
  TensorId mask_rois = kNoTensor;    // (N M, 5) fp32
  TensorId mask_labels = kNoTensor;  // (N M) int32
  TensorId mask_boxes = kNoTensor;   // (N M) int32 matched ground-truth box
  TensorId mask_weights = kNoTensor; // (N M) fp32
};
struct MaskTargets {
  TensorId targets = kNoTensor, weights = kNoTensor;  // (N M, resolution, resolution) fp32
};

}  // namespace sb
