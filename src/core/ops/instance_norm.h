// The instance-norm family (instance_norm, instance_norm_backward): its node parameters, and the scratch of one
// pass on the CUDA device (src/cuda/instance_norm.cu), sized by the graph builder without a device so the
// planner can place it: each block reduces a chunk of one sample's pixels
// over every channel into partial sums (two doubles per channel), a second kernel combines the chunks in a
// fixed order (deterministic, no atomics) into two doubles per (sample, channel).
#pragma once

#include <algorithm>
#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// Per-(sample, channel) normalisation of an (N, H, W, C) map over its H·W pixels, no affine parameters.
struct InstanceNormParams {
  int64_t batch = 0, pixels = 0, channels = 0;
  double epsilon = 1e-5;
};
NodeAttributes encode(const InstanceNormParams& params);
InstanceNormParams instance_norm_params(const Node& node);  // of instance_norm and instance_norm_backward

// Pixels per chunk: about 16 Ki elements per block, so a 32-channel map at 2048 x 1024 gets 4096 blocks
// per sample and the 1024-channel 64 x 32 map still 128.
inline int64_t instance_norm_chunk_pixels(int64_t pixels, int64_t channels) {
  return std::max<int64_t>(1, std::min<int64_t>(pixels, (16384 + channels - 1) / channels));
}

inline int64_t instance_norm_chunks(int64_t pixels, int64_t channels) {
  const int64_t chunk = instance_norm_chunk_pixels(pixels, channels);
  return (pixels + chunk - 1) / chunk;
}

// Partial sums (2 · batch · chunks · channels doubles) then the totals (2 · batch · channels doubles).
inline int64_t instance_norm_workspace_bytes(int64_t batch, int64_t pixels, int64_t channels) {
  const int64_t partials = 2 * batch * instance_norm_chunks(pixels, channels) * channels;
  return (partials + 2 * batch * channels) * int64_t(sizeof(double));
}

}  // namespace sb
