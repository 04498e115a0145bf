// StyleGAN's blur (NVlabs/stylegan networks_stylegan.py blur2d, f = [1, 2, 1], normalised, stride 1): a fixed
// depthwise 3 x 3 filter [1,2,1]ᵀ[1,2,1] / 16 with zero padding 1, in NHWC. The filter is symmetric and the
// padding equal on both sides, so the map is self-adjoint: its backward pass is the same blur of dy (the
// reference's blur2d gradient is a blur with the flipped filter, which is the filter itself), and so is
// every higher derivative. No weight, no weight gradient. Tests: tests/unit/test_cpu_stylegan_ops.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// The 1-D taps; the 2-D filter is their outer product.
constexpr float kBlurTaps[3] = {0.25f, 0.5f, 0.25f};

// y (N, H, W, C) = blur of x (N, H, W, C); y must not alias x.
void blur2d(const float* x, float* y, int64_t batch, int64_t height, int64_t width, int64_t channels);

}  // namespace sb::cpu
