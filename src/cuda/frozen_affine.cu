// CUDA frozen affine normalisation (src/cuda/frozen_affine.h): one grid-stride pass, one element per thread
// (channels last, so neighbouring threads read neighbouring channels' scale and shift from the cache).
#include <cuda_runtime.h>

#include "src/cuda/cuda_check.h"
#include "src/cuda/frozen_affine.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void frozen_affine_forward_kernel(const T* __restrict__ x, const float* __restrict__ scale,
                                             const float* __restrict__ shift, T* __restrict__ y, int64_t n,
                                             int64_t channels, bool relu) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % channels;
    const float v = to_float(x[i]) * scale[c] + shift[c];
    y[i] = from_float<T>(relu && !(v > 0.0f) ? 0.0f : v);
  }
}

template <typename T>
__global__ void frozen_affine_backward_kernel(const T* __restrict__ dy, const T* __restrict__ y,
                                              const float* __restrict__ scale, T* __restrict__ dx, int64_t n,
                                              int64_t channels, bool relu) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const bool blocked = relu && !(to_float(y[i]) > 0.0f);
    dx[i] = from_float<T>(blocked ? 0.0f : to_float(dy[i]) * scale[i % channels]);
  }
}

}  // namespace

template <typename T>
void frozen_affine_forward(const T* x, const float* scale, const float* shift, T* y, int64_t rows, int64_t channels,
                           bool relu, cudaStream_t stream) {
  const int64_t n = rows * channels;
  if (n == 0) return;
  frozen_affine_forward_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, scale, shift, y, n,
                                                                                                 channels, relu);
  SB_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void frozen_affine_backward(const T* dy, const T* y, const float* scale, T* dx, int64_t rows, int64_t channels,
                            bool relu, cudaStream_t stream) {
  const int64_t n = rows * channels;
  if (n == 0) return;
  frozen_affine_backward_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(dy, y, scale, dx, n,
                                                                                                  channels, relu);
  SB_CUDA_CHECK(cudaGetLastError());
}

#define SB_FROZEN_AFFINE(T)                                                                                       \
  template void frozen_affine_forward<T>(const T*, const float*, const float*, T*, int64_t, int64_t, bool,          \
                                         cudaStream_t);                                                             \
  template void frozen_affine_backward<T>(const T*, const T*, const float*, T*, int64_t, int64_t, bool, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_FROZEN_AFFINE)
#undef SB_FROZEN_AFFINE

}  // namespace sb::cuda
