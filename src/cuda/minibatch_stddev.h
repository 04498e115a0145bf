// CUDA minibatch standard deviation (sb::cuda): the arguments of src/cpu/minibatch_stddev.h plus the stream;
// device pointers of T (float, bf16 or fp16; statistics from fp32 loads). One block per group (it sits at D's 4 x 4 end: 4 groups of 4 x 4 x 512 at batch 16);
// per-position statistics in double, block sums in a fixed tree (deterministic).
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaMinibatchStddev).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/minibatch_stddev.h"

namespace sb::cuda {

template <typename T>
void minibatch_stddev_forward(const T* x, T* y, const cpu::MinibatchStddevGeometry& g, cudaStream_t stream);
template <typename T>
void minibatch_stddev_backward(const T* x, const T* dy, T* dx, const cpu::MinibatchStddevGeometry& g,
                               cudaStream_t stream);
template <typename T>
void minibatch_stddev_backward_backward(const T* x, const T* dy, const T* u, T* dx2, T* ddy,
                                        const cpu::MinibatchStddevGeometry& g, cudaStream_t stream);

}  // namespace sb::cuda
