// The proposals family (anchor_grid, rpn_proposals; src/core/ops/proposals.cpp): the RPN's anchors and its
// proposal stage with static shapes (src/cpu/proposals.h says how). Both are detached: no gradient reaches the RPN
// through the proposal boxes, as in torchvision. The geometry structs are what the kernels take; the readers
// below decode them from the nodes' attributes. The graph builder writes the attributes directly (the structs
// keep the thresholds as float, and the nodes store the options' doubles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "src/core/ops/detection_sizes.h"

namespace sb {

constexpr int kMaxAnchorLevels = 5;
constexpr int kAnchorsPerCell = 3;  // aspect ratios 0.5, 1, 2 (height / width)

struct AnchorLevel {
  int64_t height = 0, width = 0;      // feature map cells
  int64_t stride_h = 0, stride_w = 0;  // image pixels per cell (image size // map size)
  float size = 0;                      // anchor side at aspect ratio 1, pixels (32 ... 512)
  int64_t anchors() const { return height * width * kAnchorsPerCell; }
};

struct ProposalGeometry {
  int64_t batch = 0, anchors = 0;  // anchors per image, all levels
  int levels = 0;
  int64_t level_anchors[kMaxAnchorLevels] = {};
  int64_t pre_nms_top_n = 2000, post_nms_top_n = 2000;
  float nms_threshold = 0.7f, min_size = 1e-3f;
  float image_height = 0, image_width = 0;
  bool decode = true;  // false: proposals are the anchors themselves, clipped (the finite-difference form)
  int64_t level_candidates(int l) const { return level_anchors[l] < pre_nms_top_n ? level_anchors[l] : pre_nms_top_n; }
  int64_t candidates() const {
    int64_t n = 0;
    for (int l = 0; l < levels; ++l) n += level_candidates(l);
    return n;
  }
};

}  // namespace sb

namespace sb::detail {

inline std::vector<AnchorLevel> anchor_levels(const NodeAttributes& a) {
  std::vector<AnchorLevel> levels(static_cast<size_t>(a.at("levels")));
  for (size_t l = 0; l < levels.size(); ++l) {
    const std::string k = std::to_string(l);
    levels[l].height = detection_size(a, "h" + k), levels[l].width = detection_size(a, "w" + k);
    levels[l].stride_h = detection_size(a, "stride_h" + k), levels[l].stride_w = detection_size(a, "stride_w" + k);
    levels[l].size = static_cast<float>(a.at("size" + k));
  }
  return levels;
}

inline ProposalGeometry proposal_geometry(const NodeAttributes& a) {
  ProposalGeometry g;
  g.batch = detection_size(a, "batch"), g.anchors = detection_size(a, "anchors");
  g.levels = static_cast<int>(a.at("levels"));
  for (int l = 0; l < g.levels; ++l) g.level_anchors[l] = detection_size(a, "a" + std::to_string(l));
  g.pre_nms_top_n = detection_size(a, "pre_nms_top_n"), g.post_nms_top_n = detection_size(a, "post_nms_top_n");
  g.nms_threshold = static_cast<float>(a.at("nms_threshold")), g.min_size = static_cast<float>(a.at("min_size"));
  g.image_height = static_cast<float>(a.at("image_height")), g.image_width = static_cast<float>(a.at("image_width"));
  g.decode = a.at("decode") != 0;
  return g;
}

}  // namespace sb::detail
