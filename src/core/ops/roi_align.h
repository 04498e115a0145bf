// The RoIAlign family (roi_align, roi_align_backward; src/core/ops/roi_align.cpp): torchvision's
// MultiScaleRoIAlign as Mask R-CNN's box and mask poolers use it. Its geometry is the nodes' params: the graph
// builder encodes it, the kernels (src/cpu/roi_align.h, src/cuda/roi_align.h) read it back.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"
#include "src/core/ops/detection_sizes.h"

namespace sb {

constexpr int kMaxRoiLevels = 4;

struct RoiAlignGeometry {
  int64_t batch = 0, channels = 0, rois = 0, output_size = 0;
  int sampling_ratio = 2;
  int levels = 0;       // feature maps, finest first
  int first_level = 2;  // the FPN level of levels[0] (P2: 2); level k has scale 2^-k
  int64_t height[kMaxRoiLevels] = {}, width[kMaxRoiLevels] = {};
  bool aligned = false;
  float scale(int level) const { return 1.0f / static_cast<float>(int64_t{1} << (first_level + level)); }
};

// The attributes of both ops: batch, channels, rois, output_size, sampling_ratio, levels, first_level, aligned
// (0 / 1) and each level's extent h<l>, w<l>.
NodeAttributes encode(const RoiAlignGeometry& g);

}  // namespace sb

namespace sb::detail {

inline RoiAlignGeometry roi_align_geometry(const NodeAttributes& a) {
  RoiAlignGeometry g;
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

}  // namespace sb::detail
