// The frozen-affine family (frozen_affine, frozen_affine_backward; src/core/ops/frozen_affine.cpp): Mask R-CNN's
// FrozenBatchNorm, y = x · scale[c] + shift[c] with an optional fused ReLU, over rows of `channels`; scale and
// shift are frozen inputs (GraphBuilder::frozen_parameter), so only x gets a gradient. Kernels:
// src/cpu/frozen_affine.cpp, src/cuda/frozen_affine.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct FrozenAffineParams {
  int64_t rows = 0, channels = 0;
  bool relu = false;
};
NodeAttributes encode(const FrozenAffineParams& params);  // rows, channels, relu (0 / 1)
FrozenAffineParams frozen_affine_params(const Node& node);  // of both ops

}  // namespace sb
