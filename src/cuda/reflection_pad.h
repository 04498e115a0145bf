// CUDA reflection padding (sb::cuda): the same arguments as src/cpu/reflection_pad.h plus a stream; device
// pointers, T = float, bf16 or fp16. Forward: one thread per padded element copies its source pixel (exact).
// Backward: one thread per input element gathers the padded positions that mirror onto it (at most 3 rows x 3
// columns: itself, its top/left mirror and its bottom/right mirror), in a fixed order in fp32: deterministic,
// no atomics. Tests: tests/gpu/test_cuda_pix2pixhd_ops.cpp (suite CudaReflectionPad).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/reflection_pad.h"
#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void reflection_pad2d_forward(const T* x, T* y, const cpu::ReflectionPadGeometry& g, cudaStream_t stream);
template <typename T>
void reflection_pad2d_backward(const T* dy, T* dx, const cpu::ReflectionPadGeometry& g, cudaStream_t stream);

}  // namespace sb::cuda
