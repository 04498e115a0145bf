// CUDA dropout (sb::cuda): the same names and arguments as src/cpu/dropout.h plus the stream; device
// pointers. x, y, dy and dx are T = float, bf16 or fp16 (src/cuda/element.h); the mask is one byte per element
// either way. The element -> Philox mapping documented in src/cpu/dropout.h is reproduced bit for bit, so
// masks are identical to the CPU's for the same (seed, offset) whatever T is, and y = x * scale is the CPU's
// fp32 product (rounded once to bf16 when T is bf16). The Philox offset is a StepValue (src/cuda/step_value.h),
// resolved on the device, so a step replayed from a CUDA graph draws its own mask; cuda::eager_value(offset) is
// the CPU's `offset`. Tests: tests/gpu/test_cuda_dense.cpp (float), tests/gpu/test_cuda_bf16_elementwise.cpp
// (bf16), tests/gpu/test_cuda_step_value.cpp (a replayed offset).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"
#include "src/cuda/step_value.h"

namespace sb::cuda {

// Throws UsageError unless 0 <= p < 1 and n >= 0 (checked on the host before the launch). y may be x.
// mask may be nullptr (nothing written there): the engine's backward pass draws the same mask again.
template <typename T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, float p, uint64_t seed, StepValue offset,
                     cudaStream_t stream);

// dx = mask ? dy * (1.0f / (1.0f - p)) : 0. dx may be dy.
template <typename T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, float p, cudaStream_t stream);

}  // namespace sb::cuda
