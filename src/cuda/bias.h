// CUDA bias ops (sb::cuda): the same names and arguments as src/cpu/bias.h plus the stream; device pointers.
// The activation x / dy is T = float, bf16 or fp16 (src/cuda/element.h); the bias and its gradient stay fp32.
// bias_add_forward adds in fp32 and rounds once to T: bit-identical to the CPU for float, the CPU's result
// rounded to bf16 for bf16. bias_backward sums each column in double in a fixed order (deterministic run to
// run), so it differs from the CPU's double sums only in the final fp32 rounding, for either T.
// Tests: tests/gpu/test_cuda_dense.cpp (suite CudaDense, float), tests/gpu/test_cuda_bf16_elementwise.cpp (bf16).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// x (rows, cols) += bias (cols) broadcast over rows, in place.
template <typename T>
void bias_add_forward(T* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

// dbias (cols) = sum over rows of dy (rows, cols); overwrites dbias. Its row-chunk partial sums take at most
// bias_backward_scratch_bytes(cols) of scratch, lent by the stream's owner (src/cuda/stream_scratch.h).
template <typename T>
void bias_backward(const T* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream);
uint64_t bias_backward_scratch_bytes(int64_t cols);

}  // namespace sb::cuda
