// CUDA fused up/down-sampling weights (src/cuda/fused_conv_weight.h): grid-stride over the output's KRSC taps.
#include <cuda_runtime.h>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/fused_conv_weight.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// w4[k, r, s, c] = factor · sum of w3[k, r - a, s - b, c] over a, b in {0, 1} inside the 3 x 3 kernel.
template <typename T>
__global__ void forward_kernel(const T* w3, T* w4, int64_t out_channels, int64_t in_channels, float factor) {
  const int64_t total = out_channels * 16 * in_channels;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = i % in_channels, s = (i / in_channels) % 4, r = (i / (in_channels * 4)) % 4;
    const int64_t k = i / (in_channels * 16);
    float sum = 0.0f;
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        const int64_t rr = r - a, ss = s - b;
        if (rr >= 0 && rr <= 2 && ss >= 0 && ss <= 2) sum += to_float(w3[((k * 3 + rr) * 3 + ss) * in_channels + c]);
      }
    }
    w4[i] = from_float<T>(factor * sum);
  }
}

// dw3[k, r, s, c] = factor · sum of dw4[k, r + a, s + b, c] over a, b in {0, 1}.
template <typename T>
__global__ void backward_kernel(const T* dw4, T* dw3, int64_t out_channels, int64_t in_channels,
                                float factor) {
  const int64_t total = out_channels * 9 * in_channels;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = i % in_channels, s = (i / in_channels) % 3, r = (i / (in_channels * 3)) % 3;
    const int64_t k = i / (in_channels * 9);
    float sum = 0.0f;
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) sum += to_float(dw4[((k * 4 + r + a) * 4 + s + b) * in_channels + c]);
    }
    dw3[i] = from_float<T>(factor * sum);
  }
}

void check(int64_t out_channels, int64_t in_channels) {
  if (out_channels < 1 || in_channels < 1) throw UsageError("cuda::fused_conv_weight: channels must be >= 1");
}

}  // namespace

template <typename T>
void fused_conv_weight_forward(const T* w3, T* w4, int64_t out_channels, int64_t in_channels, float factor,
                               cudaStream_t stream) {
  check(out_channels, in_channels);
  forward_kernel<T><<<detail::grid_stride_blocks(out_channels * 16 * in_channels, kThreads), kThreads, 0, stream>>>(
      w3, w4, out_channels, in_channels, factor);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void fused_conv_weight_backward(const T* dw4, T* dw3, int64_t out_channels, int64_t in_channels,
                                float factor, cudaStream_t stream) {
  check(out_channels, in_channels);
  backward_kernel<T><<<detail::grid_stride_blocks(out_channels * 9 * in_channels, kThreads), kThreads, 0, stream>>>(
      dw4, dw3, out_channels, in_channels, factor);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_FUSED_CONV_WEIGHT(T)                                                                       \
  template void fused_conv_weight_forward<T>(const T*, T*, int64_t, int64_t, float, cudaStream_t); \
  template void fused_conv_weight_backward<T>(const T*, T*, int64_t, int64_t, float, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_FUSED_CONV_WEIGHT)

}  // namespace sb::cuda

// The fused_conv_weight family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_fused_conv_weight_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"fused_conv_weight", SB_TYPED(cuda::fused_conv_weight_forward(
                                e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "out_channels"),
                                size_attr(n, "in_channels"), float_attr(n, "factor"), e.stream()))},
      {"fused_conv_weight_backward", SB_TYPED(cuda::fused_conv_weight_backward(
                                         e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "out_channels"),
                                         size_attr(n, "in_channels"), float_attr(n, "factor"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
