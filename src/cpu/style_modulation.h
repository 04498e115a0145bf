// StyleGAN's style modulation (NVlabs/stylegan networks_stylegan.py style_mod, the AdaIN affine after the
// instance norm): y = x · (1 + style[n, c]) + style[n, C + c], x (N, H, W, C) NHWC, style (N, 2C) the output of
// the layer's dense of w. CPU reference, sums in double. Tests: tests/unit/test_cpu_stylegan_g_ops.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

#include "src/core/ops/style_modulation.h"

namespace sb::cpu {

void style_modulation_forward(const float* x, const float* style, float* y, int64_t batch, int64_t pixels,
                              int64_t channels);
// dx = dy · (1 + style[n, c]); dstyle[n, c] = sum over pixels of dy · x; dstyle[n, C + c] = sum of dy.
void style_modulation_backward(const float* x, const float* style, const float* dy, float* dx, float* dstyle,
                               int64_t batch, int64_t pixels, int64_t channels);

// The CUDA backward pass's scratch lives with the family's graph-builder code (src/core/ops/style_modulation.h).
using sb::style_modulation_chunks;
using sb::style_modulation_workspace_bytes;

}  // namespace sb::cpu
