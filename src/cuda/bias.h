// CUDA bias ops (sb::cuda): the same names and arguments as src/cpu/bias.h plus the stream; device pointers.
// bias_add_forward is bit-identical to the CPU; bias_backward sums each column in double in a fixed order
// (deterministic run to run), so it differs from the CPU's double sums only in the final fp32 rounding.
// Tests: tests/gpu/test_cuda_dense.cpp (suite CudaDense).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

// x (rows, cols) += bias (cols) broadcast over rows, in place.
void bias_add_forward(float* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

// dbias (cols) = sum over rows of dy (rows, cols); overwrites dbias.
void bias_backward(const float* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace sb::cuda
