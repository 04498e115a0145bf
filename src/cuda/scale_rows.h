// CUDA per-row scaling (sb::cuda): the same name and arguments as src/cpu/scale_rows.h plus the stream; device
// pointers. x and y are T = float, bf16 or fp16 (src/cuda/element.h), the factors fp32; one fp32 multiplication
// rounded once to T (bit-identical to the CPU for float, its result rounded once for bf16/fp16).
// Tests: tests/gpu/test_cuda_convs2s_ops.cpp (suite CudaScaleRows).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// y (rows, cols) = factors[r] · x (rows, cols); y may be x.
template <typename T>
void scale_rows_forward(const T* x, const float* factors, T* y, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace sb::cuda
