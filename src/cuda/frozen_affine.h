// CUDA frozen affine normalisation (sb::cuda): the same names and arguments as src/cpu/frozen_affine.h plus the
// stream; device pointers. x, y, dy, dx in T = float, bf16 or fp16 (src/cuda/element.h), scale and shift fp32,
// computed in fp32 and rounded once. Tests: tests/gpu/test_cuda_detection_ops.cpp (CudaFrozenAffine).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void frozen_affine_forward(const T* x, const float* scale, const float* shift, T* y, int64_t rows, int64_t channels,
                           bool relu, cudaStream_t stream);

template <typename T>
void frozen_affine_backward(const T* dy, const T* y, const float* scale, T* dx, int64_t rows, int64_t channels,
                            bool relu, cudaStream_t stream);

}  // namespace sb::cuda
