// CUDA frozen affine normalisation (src/cuda/frozen_affine.h): one grid-stride pass over packs of channels
// (channels last, so neighbouring threads read neighbouring channels' scale and shift from the cache).
#include <cuda_runtime.h>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/frozen_affine.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// Each thread takes a pack of W consecutive channels of one row (one 16-byte access when the channels and pointers
// allow): one element per thread, with its 64-bit channel modulo, made the frozen affines 9.2 ms of maskrcnn's
// 93-ms step on H200, about twice their memory time.
template <typename T, int W>
__global__ void frozen_affine_forward_kernel(const T* __restrict__ x, const float* __restrict__ scale,
                                             const float* __restrict__ shift, T* __restrict__ y, int64_t packs,
                                             int64_t channels, bool relu) {
  const int64_t channel_packs = channels / W;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i % channel_packs) * W;
    const Pack<T, W> in = *reinterpret_cast<const Pack<T, W>*>(x + i * W);
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float v = to_float(in.element[j]) * scale[c + j] + shift[c + j];
      out.element[j] = from_float<T>(relu && !(v > 0.0f) ? 0.0f : v);
    }
    *reinterpret_cast<Pack<T, W>*>(y + i * W) = out;
  }
}

template <typename T, int W>
__global__ void frozen_affine_backward_kernel(const T* __restrict__ dy, const T* __restrict__ y,
                                              const float* __restrict__ scale, T* __restrict__ dx, int64_t packs,
                                              int64_t channels, bool relu) {
  const int64_t channel_packs = channels / W;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < packs; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i % channel_packs) * W;
    const Pack<T, W> g = *reinterpret_cast<const Pack<T, W>*>(dy + i * W);
    const Pack<T, W> out = *reinterpret_cast<const Pack<T, W>*>(y + i * W);
    Pack<T, W> d;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const bool blocked = relu && !(to_float(out.element[j]) > 0.0f);
      d.element[j] = from_float<T>(blocked ? 0.0f : to_float(g.element[j]) * scale[c + j]);
    }
    *reinterpret_cast<Pack<T, W>*>(dx + i * W) = d;
  }
}

}  // namespace

template <typename T>
void frozen_affine_forward(const T* x, const float* scale, const float* shift, T* y, int64_t rows, int64_t channels,
                           bool relu, cudaStream_t stream) {
  const int64_t n = rows * channels;
  if (n == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(channels, {x, y})) {
    frozen_affine_forward_kernel<T, kWidth><<<detail::grid_stride_blocks(n / kWidth, kThreads), kThreads, 0, stream>>>(
        x, scale, shift, y, n / kWidth, channels, relu);
  } else {
    frozen_affine_forward_kernel<T, 1><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        x, scale, shift, y, n, channels, relu);
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void frozen_affine_backward(const T* dy, const T* y, const float* scale, T* dx, int64_t rows, int64_t channels,
                            bool relu, cudaStream_t stream) {
  const int64_t n = rows * channels;
  if (n == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(channels, {dy, y, dx})) {
    frozen_affine_backward_kernel<T, kWidth><<<detail::grid_stride_blocks(n / kWidth, kThreads), kThreads, 0, stream>>>(
        dy, y, scale, dx, n / kWidth, channels, relu);
  } else {
    frozen_affine_backward_kernel<T, 1><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        dy, y, scale, dx, n, channels, relu);
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

#define SB_FROZEN_AFFINE(T)                                                                                       \
  template void frozen_affine_forward<T>(const T*, const float*, const float*, T*, int64_t, int64_t, bool,          \
                                         cudaStream_t);                                                             \
  template void frozen_affine_backward<T>(const T*, const T*, const float*, T*, int64_t, int64_t, bool, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_FROZEN_AFFINE)
#undef SB_FROZEN_AFFINE

}  // namespace sb::cuda

// The frozen_affine family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_frozen_affine_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // Mask R-CNN (src/cuda/frozen_affine.h, roi_align.h, detection_losses.h, proposals.h, detection_targets.h).
      {"frozen_affine", SB_TYPED(cuda::frozen_affine_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                             e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "rows"), size_attr(n, "channels"),
                                                             size_attr(n, "relu") != 0, e.stream()))},
      {"frozen_affine_backward", SB_TYPED(cuda::frozen_affine_backward(
                                     e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                     e.at<T>(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "channels"),
                                     size_attr(n, "relu") != 0, e.stream()))},
  });
}

}  // namespace sb::cuda_binding
