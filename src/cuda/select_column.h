// One column of a (rows, cols) tensor and its gradient on the GPU: the same arguments as sb::cpu's
// (src/cpu/select_column.h) plus a stream; device pointers. T is the activation element type (float, bf16 or fp16,
// src/cuda/element.h); both kernels only copy, so they match the CPU bit for bit.
// Tests: gpu_tests --gtest_filter='CudaSelectColumn*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// y[r] = x[r * cols + column] for r < rows.   x (rows, cols), y (rows).
template <typename T>
void select_column_forward(const T* x, T* y, int64_t rows, int64_t cols, int64_t column, cudaStream_t stream);

// dx (rows, cols) = dy in `column`, 0 elsewhere (overwrites dx).
template <typename T>
void select_column_backward(const T* dy, T* dx, int64_t rows, int64_t cols, int64_t column, cudaStream_t stream);

}  // namespace sb::cuda
