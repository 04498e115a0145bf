// The upsample family: nearest and bilinear resizing of (N, H, W, C) maps to (N, out_h, out_w, C), and their
// backward ops (which read only the output gradient). Kernels: src/cpu/upsample.cpp, src/cuda/upsample.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// The resize's extents, as the kernels take them (cpu::ResizeGeometry is this struct).
struct ResizeGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
};
struct UpsampleParams : ResizeGeometry {
  bool align_corners = false;  // upsample_bilinear only: upsample_nearest's nodes carry no such attribute
};
// Without align_corners for upsample_nearest (bilinear = false), with it for upsample_bilinear.
NodeAttributes encode(const UpsampleParams& params, bool bilinear);
UpsampleParams upsample_params(const Node& node);  // of all four ops

}  // namespace sb
