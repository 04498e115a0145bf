// CUDA gated linear unit (sb::cuda): the same names and arguments as src/cpu/glu.h plus the stream; device
// pointers. T = float, bf16 or fp16 (src/cuda/element.h): loaded, computed in fp32 (sigmoid with expf, a few ulp
// from the CPU's double) and rounded once to T. Tests: tests/gpu/test_cuda_convs2s_ops.cpp (suite CudaGlu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// x (rows, 2 · cols) -> y (rows, cols) = a · sigmoid(b); y must not overlap x.
template <typename T>
void glu_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);

// dx (rows, 2 · cols) from x and dy (rows, cols); overwrites dx, which must not overlap x or dy.
template <typename T>
void glu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace sb::cuda
