// CUDA [1, 2, 1] blur (src/cuda/blur.h): grid-stride over packs of channels of NHWC outputs, consecutive threads
// on consecutive channels so every tap's reads are coalesced.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/blur.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// Each thread takes a pack of W consecutive channels of one pixel (one 16-byte access when the channels and
// pointers allow): its position arithmetic (64-bit divisions) is done once per pack. Per element it made each
// 1024 x 1024 x 16-channel blur of stylegan's batch-16 step 4.06 ms on H200, 88 ms of its 295-ms step.
template <typename T, int W>
__global__ void blur2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t batch, int64_t height,
                              int64_t width, int64_t channels) {
  const float taps[3] = {0.25f, 0.5f, 0.25f};
  const int64_t channel_packs = channels / W, total = batch * height * width * channel_packs;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = (i % channel_packs) * W, pixel = i / channel_packs;
    const int64_t w = pixel % width, h = (pixel / width) % height, n = pixel / (width * height);
    float sum[W] = {};
#pragma unroll
    for (int a = -1; a <= 1; ++a) {
      if (h + a < 0 || h + a >= height) continue;
#pragma unroll
      for (int b = -1; b <= 1; ++b) {
        if (w + b < 0 || w + b >= width) continue;
        const Pack<T, W> v =
            *reinterpret_cast<const Pack<T, W>*>(x + ((n * height + h + a) * width + w + b) * channels + c);
        const float tap = taps[a + 1] * taps[b + 1];
#pragma unroll
        for (int j = 0; j < W; ++j) sum[j] += tap * to_float(v.element[j]);
      }
    }
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) out.element[j] = from_float<T>(sum[j]);
    *reinterpret_cast<Pack<T, W>*>(y + pixel * channels + c) = out;
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
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(channels, {x, y})) {
    blur2d_kernel<T, kWidth><<<detail::grid_stride_blocks(total / kWidth, kThreads), kThreads, 0, stream>>>(
        x, y, batch, height, width, channels);
  } else {
    blur2d_kernel<T, 1><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, y, batch, height,
                                                                                             width, channels);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_BLUR(T) template void blur2d<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BLUR)

}  // namespace sb::cuda

// The blur family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_blur_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"blur2d", SB_TYPED(cuda::blur2d(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                       size_attr(n, "height"), size_attr(n, "width"), size_attr(n, "channels"),
                                       e.stream()))},
  });
}

}  // namespace sb::cuda_binding
