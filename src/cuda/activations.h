// CUDA elementwise ops (sb::cuda): the same names, arguments and conventions as src/cpu/activations.h, plus
// the stream they are queued on; pointers are device pointers. ReLU, add and scale are bit-identical to the
// CPU; GELU, GELU-tanh and tanh evaluate their transcendentals in fp32 (a few ulp, see activations.cu).
// Tests: tests/gpu/test_cuda_dense.cpp (suite CudaDense).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

// y (or dx) may be the same array as x (or dy); n < 0 throws UsageError; n == 0 launches nothing.
void gelu_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream);

void gelu_tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream);

void relu_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
void relu_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);

void tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);

void add_forward(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);

void scale_forward(const float* x, float* y, int64_t n, float scale, cudaStream_t stream);

}  // namespace sb::cuda
