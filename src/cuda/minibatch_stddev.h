// CUDA minibatch standard deviation (sb::cuda): the arguments of src/cpu/minibatch_stddev.h plus the stream;
// fp32 device pointers. One block per group (it sits at D's 4 x 4 end: 4 groups of 4 x 4 x 512 at batch 16);
// per-position statistics in double, block sums in a fixed tree (deterministic).
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaMinibatchStddev).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/minibatch_stddev.h"

namespace sb::cuda {

void minibatch_stddev_forward(const float* x, float* y, const cpu::MinibatchStddevGeometry& g, cudaStream_t stream);
void minibatch_stddev_backward(const float* x, const float* dy, float* dx, const cpu::MinibatchStddevGeometry& g,
                               cudaStream_t stream);
void minibatch_stddev_backward_backward(const float* x, const float* dy, const float* u, float* dx2, float* ddy,
                                        const cpu::MinibatchStddevGeometry& g, cudaStream_t stream);

}  // namespace sb::cuda
