// CUDA elementwise ops (sb::cuda): the same names, arguments and conventions as src/cpu/activations.h, plus
// the stream they are queued on; pointers are device pointers. T is float, bf16 or fp16 (src/cuda/element.h):
// every op loads T, computes in fp32 and rounds once to T. ReLU, add and scale are the CPU's single fp32
// operation (bit-identical for float; for bf16 the CPU result rounded once); GELU, GELU-tanh and tanh
// evaluate their transcendentals in fp32 (a few ulp, see activations.cu).
// Tests: tests/gpu/test_cuda_dense.cpp (suite CudaDense, float), tests/gpu/test_cuda_bf16_elementwise.cpp (bf16).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// y (or dx) may be the same array as x (or dy); n < 0 throws UsageError; n == 0 launches nothing.
template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);

template <typename T>
void gelu_tanh_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void gelu_tanh_backward(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);

template <typename T>
void relu_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

// slope > 0 (the backward reads the sign off y).
template <typename T>
void leaky_relu_forward(const T* x, T* y, int64_t n, float slope, cudaStream_t stream);
template <typename T>
void leaky_relu_backward(const T* y, const T* dy, T* dx, int64_t n, float slope, cudaStream_t stream);

// sigmoid in fp32 (expf: a few ulp against the CPU's double); the backward reads y.
template <typename T>
void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void sigmoid_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

template <typename T>
void tanh_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void tanh_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

template <typename T>
void add_forward(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream);

// scale stays fp32 whatever T is: y = from_float(scale * x).
template <typename T>
void scale_forward(const T* x, T* y, int64_t n, float scale, cudaStream_t stream);

}  // namespace sb::cuda
