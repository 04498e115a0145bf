// The style-modulation family (style_modulation, its backward; src/core/ops/style_modulation.cpp): StyleGAN's
// AdaIN affine y = x · (1 + style[n, c]) + style[n, C + c] (the kernels: src/cpu/style_modulation.h). Here: the
// nodes' params and the CUDA backward pass's scratch, sized by the backward rule without a device.
#pragma once

#include <algorithm>
#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// The CUDA backward pass (src/cuda/stylegan_g_ops.h) sums dstyle over chunks of pixels in parallel, each chunk's
// partial sums (double) in the node's workspace, then adds the chunks in order (deterministic): at 1024² with 16
// channels, one thread per (sample, channel) over a million pixels would leave the GPU nearly idle.
inline int64_t style_modulation_chunks(int64_t pixels) { return std::clamp<int64_t>((pixels + 2047) / 2048, 1, 256); }
inline int64_t style_modulation_workspace_bytes(int64_t batch, int64_t pixels, int64_t channels) {
  return style_modulation_chunks(pixels) * batch * 2 * channels * int64_t(sizeof(double));
}

// x (batch, H, W, channels) with pixels = H·W, style (batch, 2 · channels).
struct StyleModulationParams {
  int64_t batch = 0, pixels = 0, channels = 0;
};
NodeAttributes encode(const StyleModulationParams& params);
StyleModulationParams style_modulation_params(const Node& node);  // of both ops

}  // namespace sb
