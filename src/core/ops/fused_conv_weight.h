// The fused-conv-weight family (fused_conv_weight, its backward; src/core/ops/fused_conv_weight.cpp): StyleGAN's
// fused up/down-sampling convs turn a (K, 3, 3, C) weight into the (K, 4, 4, C) one of the stride-2 conv (the
// 3 x 3 kernel summed over its four shifts, times "factor": 1 up, 0.25 down). Kernels:
// src/cpu/fused_conv_weight.cpp, src/cuda/fused_conv_weight.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct FusedConvWeightParams {
  int64_t out_channels = 0, in_channels = 0;  // K and C
  double factor = 1.0;                        // 1 (up-sampling) or 0.25 (down-sampling: the 2 x 2 average)
};
NodeAttributes encode(const FusedConvWeightParams& params);
FusedConvWeightParams fused_conv_weight_params(const Node& node);  // of both ops

}  // namespace sb
