// CUDA [1, 2, 1] blur (src/cuda/blur.h): grid-stride over NHWC outputs, consecutive threads on consecutive
// channels so every tap's reads are coalesced.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/blur.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void blur2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t batch, int64_t height,
                              int64_t width, int64_t channels) {
  const float taps[3] = {0.25f, 0.5f, 0.25f};
  const int64_t total = batch * height * width * channels;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = i % channels, w = (i / channels) % width, h = (i / (channels * width)) % height;
    const int64_t n = i / (channels * width * height);
    float sum = 0.0f;
#pragma unroll
    for (int a = -1; a <= 1; ++a) {
      if (h + a < 0 || h + a >= height) continue;
#pragma unroll
      for (int b = -1; b <= 1; ++b) {
        if (w + b < 0 || w + b >= width) continue;
        sum += taps[a + 1] * taps[b + 1] * to_float(x[((n * height + h + a) * width + w + b) * channels + c]);
      }
    }
    y[i] = from_float<T>(sum);
  }
}

}  // namespace

template <typename T>
void blur2d(const T* x, T* y, int64_t batch, int64_t height, int64_t width, int64_t channels,
            cudaStream_t stream) {
  if (batch < 0 || height < 0 || width < 0 || channels < 0) {
    throw UsageError("cuda::blur2d: negative size");
  }
  const int64_t total = batch * height * width * channels;
  if (total == 0) return;
  blur2d_kernel<T><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, y, batch, height, width,
                                                                                       channels);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_BLUR(T) template void blur2d<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BLUR)

}  // namespace sb::cuda
