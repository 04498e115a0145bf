// CUDA fill (sb::cuda): y[i] = value (rounded to T: float, bf16 or fp16) for n elements, the `fill` node (GraphBuilder::constant, and the unit
// seed of an input gradient). Tests: tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

template <typename T>
void fill(T* y, int64_t n, float value, cudaStream_t stream);

}  // namespace sb::cuda
