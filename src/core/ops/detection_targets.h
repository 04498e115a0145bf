// The detection-targets family (rpn_targets, roi_sample, mask_targets; src/core/ops/detection_targets.cpp):
// Mask R-CNN's target assignment with static shapes (src/cpu/detection_targets.h says how). All three are
// detached: their outputs are data for the losses. The geometry structs are what the kernels take; the readers
// below decode them from the nodes' attributes. The graph builder writes rpn_targets' and roi_sample's
// attributes directly (the structs keep the IoU thresholds and fractions as float, the nodes the options'
// doubles); mask_targets' three sizes are all integers, so MaskTargetParams encodes them.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"
#include "scalebench/host_device.h"
#include "src/core/ops/detection_sizes.h"

namespace sb {

struct RpnTargetGeometry {
  int64_t batch = 0, anchors = 0, boxes = 0;
  int64_t sampled_per_image = 256;
  float positive_fraction = 0.5f;
  float foreground_iou = 0.7f, background_iou = 0.3f;
  SB_HOST_DEVICE int64_t max_positives() const {
    return static_cast<int64_t>(static_cast<float>(sampled_per_image) * positive_fraction);
  }
};

struct RoiSampleGeometry {
  int64_t batch = 0, proposals = 0, boxes = 0;
  int64_t rois_per_image = 512, mask_rois_per_image = 64;
  float positive_fraction = 0.25f, foreground_iou = 0.5f;
  SB_HOST_DEVICE int64_t candidates() const { return proposals + boxes; }  // proposals, then the ground truth itself
  SB_HOST_DEVICE int64_t max_positives() const {
    return static_cast<int64_t>(static_cast<float>(rois_per_image) * positive_fraction);
  }
};

// mask_targets: the mask RoIs, the ground-truth boxes per image and the targets' side.
struct MaskTargetParams {
  int64_t rois = 0, boxes = 0, resolution = 0;
};
NodeAttributes encode(const MaskTargetParams& params);
MaskTargetParams mask_target_params(const Node& node);

}  // namespace sb

namespace sb::detail {

inline RpnTargetGeometry rpn_target_geometry(const NodeAttributes& a) {
  RpnTargetGeometry g;
  g.batch = detection_size(a, "batch"), g.anchors = detection_size(a, "anchors"), g.boxes = detection_size(a, "boxes");
  g.sampled_per_image = detection_size(a, "sampled_per_image");
  g.positive_fraction = static_cast<float>(a.at("positive_fraction"));
  g.foreground_iou = static_cast<float>(a.at("foreground_iou"));
  g.background_iou = static_cast<float>(a.at("background_iou"));
  return g;
}

inline RoiSampleGeometry roi_sample_geometry(const NodeAttributes& a) {
  RoiSampleGeometry g;
  g.batch = detection_size(a, "batch"), g.proposals = detection_size(a, "proposals");
  g.boxes = detection_size(a, "boxes");
  g.rois_per_image = detection_size(a, "rois_per_image");
  g.mask_rois_per_image = detection_size(a, "mask_rois_per_image");
  g.positive_fraction = static_cast<float>(a.at("positive_fraction"));
  g.foreground_iou = static_cast<float>(a.at("foreground_iou"));
  return g;
}

}  // namespace sb::detail
