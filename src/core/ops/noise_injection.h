// The noise-injection family (noise_injection, its backward; src/core/ops/noise_injection.cpp): StyleGAN's noise
// inputs, y = x + weight[c] · noise[n, h, w] with the noise drawn afresh every step from the step's Philox range
// (the kernels and the draw: src/cpu/noise_injection.h). Here: the nodes' params, the Philox blocks a node takes
// and the CUDA backward pass's scratch, which the graph builder and the backward rule size without a device.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// Philox blocks one sample's noise over `pixels` takes per step (the node's "n" attribute is 2 · pixels: four
// uniforms per block).
constexpr int64_t noise_blocks(int64_t pixels) { return (pixels + 1) / 2; }

// The CUDA backward pass (src/cuda/stylegan_g_ops.h) sums over chunks of the batch's (sample, pixel) rows in
// parallel, each chunk's partial sums (double, one per channel) in the node's workspace, then adds the chunks in
// order (deterministic).
constexpr int64_t noise_injection_chunks(int64_t rows) {
  return (rows + 4095) / 4096 < 1 ? 1 : ((rows + 4095) / 4096 > 1024 ? 1024 : (rows + 4095) / 4096);
}
constexpr int64_t noise_injection_workspace_bytes(int64_t batch, int64_t pixels, int64_t channels) {
  return noise_injection_chunks(batch * pixels) * channels * int64_t(sizeof(double));
}

// x (batch, H, W, channels) with pixels = H·W; "n": the uniforms one sample draws (4 · noise_blocks(pixels)), so
// the executor sizes the step's Philox range by it; "block_offset": the node's first block in that range.
struct NoiseInjectionParams {
  int64_t batch = 0, pixels = 0, channels = 0;
  int64_t n = 0, block_offset = 0;
};
NodeAttributes encode(const NoiseInjectionParams& params);
NoiseInjectionParams noise_injection_params(const Node& node);  // of both ops

}  // namespace sb
