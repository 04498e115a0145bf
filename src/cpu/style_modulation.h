// StyleGAN's style modulation (NVlabs/stylegan networks_stylegan.py style_mod, the AdaIN affine after the
// instance norm): y = x · (1 + style[n, c]) + style[n, C + c], x (N, H, W, C) NHWC, style (N, 2C) the output of
// the layer's dense of w. CPU reference, sums in double. Tests: tests/unit/test_cpu_stylegan_g_ops.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

namespace sb::cpu {

void style_modulation_forward(const float* x, const float* style, float* y, int64_t batch, int64_t pixels,
                              int64_t channels);
// dx = dy · (1 + style[n, c]); dstyle[n, c] = sum over pixels of dy · x; dstyle[n, C + c] = sum of dy.
void style_modulation_backward(const float* x, const float* style, const float* dy, float* dx, float* dstyle,
                               int64_t batch, int64_t pixels, int64_t channels);

// The CUDA backward pass (src/cuda/stylegan_g_ops.h) sums dstyle over chunks of pixels in parallel, each chunk's
// partial sums (double) in the node's workspace, then adds the chunks in order (deterministic): at 1024² with 16
// channels, one thread per (sample, channel) over a million pixels would leave the GPU nearly idle.
inline int64_t style_modulation_chunks(int64_t pixels) { return std::clamp<int64_t>((pixels + 2047) / 2048, 1, 256); }
inline int64_t style_modulation_workspace_bytes(int64_t batch, int64_t pixels, int64_t channels) {
  return style_modulation_chunks(pixels) * batch * 2 * channels * int64_t(sizeof(double));
}

}  // namespace sb::cpu
