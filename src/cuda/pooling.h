// Max and average pooling on the GPU: the same arguments as src/cpu/pooling.h plus a stream; device pointers;
// x, y, dy, dx are T = float, bf16 or fp16, argmax int32. Forward: one thread per output element; backward:
// one thread per input element gathering from the windows that contain it (deterministic, no atomics). Max
// pooling's y is an input value (bit-exact); averages and gradients are summed in fp32 and rounded once.
// Tests: tests/gpu/test_cuda_pooling.cpp (suite CudaPooling).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"
#include "src/core/ops/conv2d.h"

namespace sb::cuda {

template <typename T>
void max_pool2d_forward(const T* x, T* y, int32_t* argmax, const Conv2dGeometry& g, cudaStream_t stream);
template <typename T>
void max_pool2d_backward(const T* dy, const int32_t* argmax, T* dx, const Conv2dGeometry& g, cudaStream_t stream);
template <typename T>
void avg_pool2d_forward(const T* x, T* y, const Conv2dGeometry& g, bool count_include_pad, cudaStream_t stream);
template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const Conv2dGeometry& g, bool count_include_pad, cudaStream_t stream);

}  // namespace sb::cuda
