// CUDA kernels of StyleGAN's generator ops (sb::cuda): the arguments of src/cpu/pixel_norm.h,
// noise_injection.h, style_modulation.h, style_mix.h and ema.h plus the stream; activations of T (float, bf16 or fp16:
// src/cuda/element.h, loaded to fp32 and rounded once on store), the noise weight and the EMA fp32.
// Row and channel sums in double in a fixed order (pixel norm: one thread per row; the backward passes' sums over
// pixels: chunks in parallel, then the chunks in order, through the node's workspace); the noise is
// src/cpu/noise_injection.h's noise_value, the same Philox bits on both devices. The noise's Philox offset and the
// EMA's step are StepValues (src/cuda/step_value.h), resolved on the device so that a step replayed from a CUDA
// graph draws its own noise: cuda::eager_value(v) is the CPU's v.
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/step_value.h"

namespace sb::cuda {

template <typename T>
void pixel_norm_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void pixel_norm_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream);

template <typename T>
void noise_injection_forward(const T* x, const float* weight, const int32_t* sample_ids, T* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, StepValue offset, cudaStream_t stream);
// workspace: cpu::noise_injection_workspace_bytes (the chunks' partial sums).
template <typename T>
void noise_injection_backward(const T* dy, const int32_t* sample_ids, float* dweight, double* workspace, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, StepValue offset, cudaStream_t stream);

template <typename T>
void style_modulation_forward(const T* x, const T* style, T* y, int64_t batch, int64_t pixels,
                              int64_t channels, cudaStream_t stream);
// workspace: cpu::style_modulation_workspace_bytes (the chunks' partial sums).
template <typename T>
void style_modulation_backward(const T* x, const T* style, const T* dy, T* dx, T* dstyle, double* workspace,
                               int64_t batch, int64_t pixels, int64_t channels, cudaStream_t stream);

// layers and dlayers: num_layers device pointers to T (at most 32), passed by value.
struct LayerPointers {
  const void* at[32];
};
struct MutableLayerPointers {
  void* at[32];
};
template <typename T>
void style_mix_forward(const T* w, const int32_t* crossover, const MutableLayerPointers& layers, int64_t num_layers,
                       int64_t batch, int64_t dim, cudaStream_t stream);
template <typename T>
void style_mix_backward(const LayerPointers& dlayers, const int32_t* crossover, T* dw, int64_t num_layers,
                        int64_t batch, int64_t dim, cudaStream_t stream);

// The CPU's first_step is `step.resolve() == 0` (the executor's step(): the first step of a phase copies).
void ema_update(const float* param, float* average, int64_t n, float beta, StepValue step, cudaStream_t stream);

}  // namespace sb::cuda
