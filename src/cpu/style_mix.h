// StyleGAN's style mixing (NVlabs/stylegan networks_stylegan.py G_style, style_mixing_prob 0.9): the mapping
// network runs on both latents of a sample (w of shape (2N, D): rows 0..N-1 from z1, N..2N-1 from z2), and
// layer l of sample n reads w[n] below the sample's crossover layer and w[N + n] from it on (crossover = the
// layer count: no mixing). One output (N, D) per synthesis layer. CPU reference.
// Tests: tests/unit/test_cpu_stylegan_g_ops.cpp (suite CpuStyleMix).
#pragma once

#include <cstdint>

namespace sb::cpu {

// layers[l] (N, D) = crossover[n] > l ? w[n] : w[N + n].
void style_mix_forward(const float* w, const int32_t* crossover, float* const* layers, int64_t num_layers,
                       int64_t batch, int64_t dim);
// dw (2N, D): the layers' gradients summed into the rows they were read from (overwritten).
void style_mix_backward(const float* const* dlayers, const int32_t* crossover, float* dw, int64_t num_layers,
                        int64_t batch, int64_t dim);

}  // namespace sb::cpu
