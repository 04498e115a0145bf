// CUDA kernels of StyleGAN's generator ops (sb::cuda): the arguments of src/cpu/pixel_norm.h,
// noise_injection.h, style_modulation.h, style_mix.h and ema.h plus the stream; fp32 device pointers.
// Row and channel sums in double in a fixed order (one thread per row or per (sample, channel)); the noise is
// src/cpu/noise_injection.h's noise_value, the same Philox bits on both devices.
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void pixel_norm_forward(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
void pixel_norm_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t cols, cudaStream_t stream);

void noise_injection_forward(const float* x, const float* weight, const int32_t* sample_ids, float* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset, cudaStream_t stream);
void noise_injection_backward(const float* dy, const int32_t* sample_ids, float* dweight, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset, cudaStream_t stream);

void style_modulation_forward(const float* x, const float* style, float* y, int64_t batch, int64_t pixels,
                              int64_t channels, cudaStream_t stream);
void style_modulation_backward(const float* x, const float* style, const float* dy, float* dx, float* dstyle,
                               int64_t batch, int64_t pixels, int64_t channels, cudaStream_t stream);

// layers and dlayers: device arrays of num_layers device pointers (at most 32), passed by value.
struct LayerPointers {
  const float* at[32];
};
struct MutableLayerPointers {
  float* at[32];
};
void style_mix_forward(const float* w, const int32_t* crossover, const MutableLayerPointers& layers, int64_t num_layers,
                       int64_t batch, int64_t dim, cudaStream_t stream);
void style_mix_backward(const LayerPointers& dlayers, const int32_t* crossover, float* dw, int64_t num_layers,
                        int64_t batch, int64_t dim, cudaStream_t stream);

void ema_update(const float* param, float* average, int64_t n, float beta, bool first_step, cudaStream_t stream);

}  // namespace sb::cuda
