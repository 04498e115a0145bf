// What the CUDA kernels of StyleGAN's ops share (src/cuda/blur.cu, minibatch_stddev.cu, gan_losses.cu): a
// fixed-order block sum in double, so that results do not depend on scheduling.
#pragma once

#include <cuda_runtime.h>

namespace sb::cuda::detail {

// The sum of every thread's `value` in a block of kThreads (a power of two <= 1024), returned to every thread;
// a fixed tree over shared memory. `shared` holds kThreads doubles; all threads must call it.
template <int kThreads>
__device__ inline double block_sum(double value, double* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

}  // namespace sb::cuda::detail
