// Data-movement kernels on the GPU: broadcast add of a trailing block and the swap of the two middle
// dimensions (attention heads). The same arguments as sb::cpu's (src/cpu/layout.h) plus a stream; device
// pointers. Both are exact (one fp32 add, or a copy), so they match the CPU bit for bit.
// Tests: gpu_tests --gtest_filter='CudaLayout*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

// y[r * block + i] = x[r * block + i] + table[i] for r < repeats. y may alias x (elementwise, in place).
void add_broadcast_forward(const float* x, const float* table, float* y, int64_t repeats, int64_t block,
                           cudaStream_t stream);

// y (a, c, b, d) = x (a, b, c, d). y may not alias x.
void swap_middle(const float* x, float* y, int64_t a, int64_t b, int64_t c, int64_t d, cudaStream_t stream);

}  // namespace sb::cuda
