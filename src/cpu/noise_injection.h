// StyleGAN's noise inputs (NVlabs/stylegan networks_stylegan.py apply_noise): y = x + weight[c] · noise[n, h, w],
// one N(0, 1) value per pixel shared by the channels, drawn afresh every step, and a learned per-channel weight.
// The noise is a pure function of (seed, the step's Philox offset, the sample's GLOBAL index, pixel), so a
// data-parallel rank draws for its samples exactly what one rank with the whole batch draws for them (the
// --check invariant), and the backward pass draws it again instead of keeping it:
//   block   = offset + pixel / 2, counter = {low32(block), high32(block), sample, 0}, key = philox_key(seed)
//   words   = philox4x32(counter, key); pixel even: words 0, 1; odd: words 2, 3
//   u1      = ((w_a >> 8) + 1) · 2^-24 in (0, 1],  u2 = (w_b >> 8) · 2^-24 in [0, 1)
//   noise   = sqrt(-2 ln u1) · cos(2π u2)   (Box-Muller, in double, rounded once)
// A node over H·W pixels owns Philox blocks [offset, offset + ceil(H·W / 2)) of every sample's stream.
// CPU reference; the CUDA kernels draw the same bits (the logarithm and cosine may differ in the last bit).
// Tests: tests/unit/test_cpu_stylegan_g_ops.cpp (suite CpuNoiseInjection).
#pragma once

#include <cmath>
#include <cstdint>

#include "scalebench/host_device.h"
#include "scalebench/philox.h"
#include "src/core/ops/noise_injection.h"

namespace sb::cpu {

SB_HOST_DEVICE inline float noise_value(uint64_t seed, uint64_t offset, uint32_t sample, int64_t pixel) {
  const uint64_t block = offset + static_cast<uint64_t>(pixel / 2);
  PhiloxCounter counter = philox_counter(block);
  counter.word[2] = sample;
  const PhiloxCounter bits = philox4x32(counter, philox_key(seed));
  const int lane = static_cast<int>(pixel % 2) * 2;
  const double u1 = (double(bits.word[lane] >> 8) + 1.0) * (1.0 / 16777216.0);
  const double u2 = double(bits.word[lane + 1] >> 8) * (1.0 / 16777216.0);
  return static_cast<float>(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

// The Philox blocks a node takes and the CUDA backward pass's scratch live with the family's graph-builder code
// (src/core/ops/noise_injection.h), which sizes them without a device.
using sb::noise_blocks;
using sb::noise_injection_chunks;
using sb::noise_injection_workspace_bytes;

// y (N, H, W, C) = x + weight[c] · noise(sample_ids[n], h·W + w); y may be x.
void noise_injection_forward(const float* x, const float* weight, const int32_t* sample_ids, float* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset);
// dweight[c] = sum over n, pixels of dy · noise (the same draws); dx is dy itself (the rule passes it on).
void noise_injection_backward(const float* dy, const int32_t* sample_ids, float* dweight, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset);

}  // namespace sb::cpu
