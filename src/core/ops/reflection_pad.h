// The reflection-pad family (reflection_pad2d, reflection_pad2d_backward; src/core/ops/reflection_pad.cpp):
// torch.nn.ReflectionPad2d over an (N, H, W, C) map. Kernels: src/cpu/reflection_pad.cpp,
// src/cuda/reflection_pad.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// The input's extent and the four pads; the output is (batch, in_h + top + bottom, in_w + left + right,
// channels). Both ops carry the same attributes (the backward node copies the forward's).
// The kernels take it as cpu::ReflectionPadGeometry (an alias): one struct from builder to kernel.
struct ReflectionPadParams {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  int64_t out_h() const { return in_h + top + bottom; }
  int64_t out_w() const { return in_w + left + right; }
};
NodeAttributes encode(const ReflectionPadParams& params);
ReflectionPadParams reflection_pad_params(const Node& node);  // of reflection_pad2d and its backward

}  // namespace sb
