// Nearest and bilinear resizing on the GPU: the same arguments as src/cpu/upsample.h plus a stream; device
// pointers, T = float, bf16 or fp16. Forward: one thread per output element, taps and weights in fp32 by the
// CPU's formula. Backward: one thread per input element gathering every output whose taps include it
// (deterministic, no atomics); the candidate outputs are a conservative index range, each checked exactly.
// Tests: tests/gpu/test_cuda_upsample_concat.cpp (suite CudaUpsample).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/upsample.h"
#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void upsample_nearest_forward(const T* x, T* y, const cpu::ResizeGeometry& g, cudaStream_t stream);
template <typename T>
void upsample_nearest_backward(const T* dy, T* dx, const cpu::ResizeGeometry& g, cudaStream_t stream);
template <typename T>
void upsample_bilinear_forward(const T* x, T* y, const cpu::ResizeGeometry& g, bool align_corners,
                               cudaStream_t stream);
template <typename T>
void upsample_bilinear_backward(const T* dy, T* dx, const cpu::ResizeGeometry& g, bool align_corners,
                                cudaStream_t stream);

}  // namespace sb::cuda
