// The sizes of Mask R-CNN's detection nodes, read back from the attributes the graph builder stored
// (src/engine/graph_builder_detection.cpp), for both executors.
#pragma once

#include <string>

#include "scalebench/graph.h"
#include "src/cpu/detection_losses.h"
#include "src/cpu/detection_targets.h"
#include "src/cpu/proposals.h"
#include "src/cpu/roi_align.h"

namespace sb::detail {

inline int64_t detection_size(const NodeAttributes& a, const std::string& name) {
  return static_cast<int64_t>(a.at(name));
}

inline cpu::RoiAlignGeometry roi_align_geometry(const NodeAttributes& a) {
  cpu::RoiAlignGeometry g;
  g.batch = detection_size(a, "batch"), g.channels = detection_size(a, "channels");
  g.rois = detection_size(a, "rois"), g.output_size = detection_size(a, "output_size");
  g.sampling_ratio = static_cast<int>(a.at("sampling_ratio"));
  g.levels = static_cast<int>(a.at("levels")), g.first_level = static_cast<int>(a.at("first_level"));
  for (int l = 0; l < g.levels; ++l) {
    g.height[l] = detection_size(a, "h" + std::to_string(l));
    g.width[l] = detection_size(a, "w" + std::to_string(l));
  }
  g.aligned = a.at("aligned") != 0;
  return g;
}

inline cpu::ClassSelection class_selection(const NodeAttributes& a) {
  cpu::ClassSelection s;
  s.groups = detection_size(a, "groups"), s.rows = detection_size(a, "rows");
  s.classes = detection_size(a, "classes"), s.inner = detection_size(a, "inner");
  return s;
}

inline std::vector<cpu::AnchorLevel> anchor_levels(const NodeAttributes& a) {
  std::vector<cpu::AnchorLevel> levels(static_cast<size_t>(a.at("levels")));
  for (size_t l = 0; l < levels.size(); ++l) {
    const std::string k = std::to_string(l);
    levels[l].height = detection_size(a, "h" + k), levels[l].width = detection_size(a, "w" + k);
    levels[l].stride_h = detection_size(a, "stride_h" + k), levels[l].stride_w = detection_size(a, "stride_w" + k);
    levels[l].size = static_cast<float>(a.at("size" + k));
  }
  return levels;
}

inline cpu::ProposalGeometry proposal_geometry(const NodeAttributes& a) {
  cpu::ProposalGeometry g;
  g.batch = detection_size(a, "batch"), g.anchors = detection_size(a, "anchors");
  g.levels = static_cast<int>(a.at("levels"));
  for (int l = 0; l < g.levels; ++l) g.level_anchors[l] = detection_size(a, "a" + std::to_string(l));
  g.pre_nms_top_n = detection_size(a, "pre_nms_top_n"), g.post_nms_top_n = detection_size(a, "post_nms_top_n");
  g.nms_threshold = static_cast<float>(a.at("nms_threshold")), g.min_size = static_cast<float>(a.at("min_size"));
  g.image_height = static_cast<float>(a.at("image_height")), g.image_width = static_cast<float>(a.at("image_width"));
  g.decode = a.at("decode") != 0;
  return g;
}

inline cpu::RpnTargetGeometry rpn_target_geometry(const NodeAttributes& a) {
  cpu::RpnTargetGeometry g;
  g.batch = detection_size(a, "batch"), g.anchors = detection_size(a, "anchors"), g.boxes = detection_size(a, "boxes");
  g.sampled_per_image = detection_size(a, "sampled_per_image");
  g.positive_fraction = static_cast<float>(a.at("positive_fraction"));
  g.foreground_iou = static_cast<float>(a.at("foreground_iou"));
  g.background_iou = static_cast<float>(a.at("background_iou"));
  return g;
}

inline cpu::RoiSampleGeometry roi_sample_geometry(const NodeAttributes& a) {
  cpu::RoiSampleGeometry g;
  g.batch = detection_size(a, "batch"), g.proposals = detection_size(a, "proposals");
  g.boxes = detection_size(a, "boxes");
  g.rois_per_image = detection_size(a, "rois_per_image");
  g.mask_rois_per_image = detection_size(a, "mask_rois_per_image");
  g.positive_fraction = static_cast<float>(a.at("positive_fraction"));
  g.foreground_iou = static_cast<float>(a.at("foreground_iou"));
  return g;
}

}  // namespace sb::detail
