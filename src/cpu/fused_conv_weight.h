// The weights of StyleGAN's fused up- and down-sampling convolutions (NVlabs/stylegan networks_stylegan.py
// upscale2d_conv2d, conv2d_downscale2d): the 3 x 3 parameter padded by one on every side and summed over its
// four one-pixel shifts, a 4 x 4 kernel, times 1 (up: a transposed 4 x 4 stride-2 conv) or 0.25 (down: a
// 4 x 4 stride-2 conv, the average of the four shifts). KRSC layout as conv2d: w (K, 3, 3, C) -> (K, 4, 4, C).
// The backward pass is the transpose: each 3 x 3 tap gathers the four 4 x 4 taps it was added to.
// Tests: tests/unit/test_cpu_stylegan_ops.cpp (suite CpuFusedConvWeight).
#pragma once

#include <cstdint>

namespace sb::cpu {

// w4[k, r, s, c] = factor · sum over a, b in {0, 1} of w3[k, r - a, s - b, c] (taps outside 0..2 are 0).
void fused_conv_weight_forward(const float* w3, float* w4, int64_t out_channels, int64_t in_channels, float factor);
// dw3[k, r, s, c] = factor · sum over a, b in {0, 1} of dw4[k, r + a, s + b, c].
void fused_conv_weight_backward(const float* dw4, float* dw3, int64_t out_channels, int64_t in_channels,
                                float factor);

}  // namespace sb::cpu
