// CUDA weight normalisation (sb::cuda): the same names and arguments as src/cpu/weight_norm.h plus the stream;
// device pointers, fp32 throughout (v, g and their gradients are parameters; the normalised weight is cast to
// the compute dtype afterwards like any weight). Each row's sum is taken in double in a fixed order, so results
// are the same run to run and within a rounding or two of the CPU's sequential double sums.
// Tests: tests/gpu/test_cuda_convs2s_ops.cpp (suite CudaWeightNorm).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void weight_norm_forward(const float* v, const float* g, float* w, float* norms, int64_t rows, int64_t cols,
                         cudaStream_t stream);

void weight_norm_backward(const float* dw, const float* v, const float* g, const float* norms, float* dv, float* dg,
                          int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace sb::cuda
