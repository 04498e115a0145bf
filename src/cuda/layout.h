// Data-movement kernels on the GPU: broadcast add of a trailing block and the swap of the two middle
// dimensions (attention heads). The same arguments as sb::cpu's (src/cpu/layout.h) plus a stream; device
// pointers. Activations are T = float, bf16 or fp16 (src/cuda/element.h); the broadcast table (position
// embeddings) stays fp32. Both are exact up to the one rounding to T (one fp32 add, or a copy), so they match
// the CPU bit for bit: for bf16, the CPU's result rounded to bf16.
// Tests: gpu_tests --gtest_filter='CudaLayout*:CudaBf16Layout*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// y[r * block + i] = x[r * block + i] + table[i] for r < repeats. y may alias x (elementwise, in place).
template <typename T>
void add_broadcast_forward(const T* x, const float* table, T* y, int64_t repeats, int64_t block,
                           cudaStream_t stream);

// y (a, c, b, d) = x (a, b, c, d). y may not alias x.
template <typename T>
void swap_middle(const T* x, T* y, int64_t a, int64_t b, int64_t c, int64_t d, cudaStream_t stream);

}  // namespace sb::cuda
