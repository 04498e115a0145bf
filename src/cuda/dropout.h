// CUDA dropout (sb::cuda): the same names and arguments as src/cpu/dropout.h plus the stream; device
// pointers. The element -> Philox mapping documented there is reproduced bit for bit, so masks and outputs
// are identical to the CPU's for the same (seed, offset). Tests: tests/gpu/test_cuda_dense.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

// Throws UsageError unless 0 <= p < 1 and n >= 0 (checked on the host before the launch). y may be x.
void dropout_forward(const float* x, float* y, uint8_t* mask, int64_t n, float p, uint64_t seed,
                     uint64_t offset, cudaStream_t stream);

// dx = mask ? dy * (1.0f / (1.0f - p)) : 0. dx may be dy.
void dropout_backward(const float* dy, const uint8_t* mask, float* dx, int64_t n, float p,
                      cudaStream_t stream);

}  // namespace sb::cuda
