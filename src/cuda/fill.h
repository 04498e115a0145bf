// CUDA fill (sb::cuda): y[i] = value for n fp32 elements, the `fill` node (GraphBuilder::constant, and the unit
// seed of an input gradient). Tests: tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void fill(float* y, int64_t n, float value, cudaStream_t stream);

}  // namespace sb::cuda
