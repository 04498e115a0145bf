// LayerNorm over the last axis on the GPU: the same arguments as sb::cpu::layernorm_* (src/cpu/layernorm.h)
// plus a stream; every pointer is a device pointer. The activations x, y, dy, dx are T = float, bf16 or fp16
// (src/cuda/element.h); gamma, beta, their gradients and the saved mean / rstd stay fp32. Statistics in fp32
// (two-pass mean then biased variance, as the CPU reference), rstd = 1 / sqrt(var + epsilon); y and dx are
// rounded once to T. dgamma/dbeta are deterministic fp32 column sums: partial sums per block of rows, then
// one ordered pass over the blocks (no atomics). Tests: gpu_tests --gtest_filter='CudaLayerNorm*:CudaBf16LayerNorm*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// x, y: (rows, cols); gamma, beta: (cols); mean, rstd: (rows). y may not alias x.
template <typename T>
void layernorm_forward(const T* x, const float* gamma, const float* beta, T* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float epsilon, cudaStream_t stream);

// dy, x, dx: (rows, cols); gamma, dgamma, dbeta: (cols); mean, rstd: (rows) from the forward pass.
// dx, dgamma and dbeta are overwritten. Takes a stream-ordered workspace of 2 * ceil(rows / chunk) * cols
// floats (cudaMallocAsync, at most 2 * 1024 * cols) for the partial column sums, released on the stream.
template <typename T>
void layernorm_backward(const T* dy, const T* x, const float* gamma, const float* mean, const float* rstd, T* dx,
                        float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream);
// The upper bound of layernorm_backward's scratch (the gamma and beta partial sums per row chunk), lent by the
// stream's owner (src/cuda/stream_scratch.h).
uint64_t layernorm_backward_scratch_bytes(int64_t cols);

}  // namespace sb::cuda
