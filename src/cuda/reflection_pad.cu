// CUDA reflection padding (src/cuda/reflection_pad.h): grid-stride loops over NHWC elements.
#include <cuda_runtime.h>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/reflection_pad.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline int64_t reflect(int64_t i, int64_t begin, int64_t extent) {
  int64_t v = i - begin;
  if (v < 0) v = -v;
  if (v >= extent) v = 2 * (extent - 1) - v;
  return v;
}

template <typename T>
__global__ void pad_forward_kernel(const T* __restrict__ x, T* __restrict__ y, cpu::ReflectionPadGeometry g) {
  const int64_t oh = g.in_h + g.top + g.bottom, ow = g.in_w + g.left + g.right;
  const int64_t total = g.batch * oh * ow * g.channels;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = i % g.channels, pixel = i / g.channels;
    const int64_t j = pixel % ow, rest = pixel / ow, r = rest % oh, n = rest / oh;
    const int64_t h = reflect(r, g.top, g.in_h), w = reflect(j, g.left, g.in_w);
    y[i] = x[((n * g.in_h + h) * g.in_w + w) * g.channels + c];
  }
}

// Padded indices (up to 3) whose reflection is input index v: v + begin itself, the mirror before it
// (begin − v, for 1 <= v <= begin) and the mirror after it (begin + 2 (extent − 1) − v, inside the end pad).
__device__ inline int sources(int64_t v, int64_t begin, int64_t end, int64_t extent, int64_t out[3]) {
  int count = 0;
  out[count++] = v + begin;
  if (v >= 1 && v <= begin) out[count++] = begin - v;
  const int64_t after = begin + 2 * (extent - 1) - v;
  if (v <= extent - 2 && after < begin + extent + end) out[count++] = after;
  return count;
}

template <typename T>
__global__ void pad_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, cpu::ReflectionPadGeometry g) {
  const int64_t oh = g.in_h + g.top + g.bottom, ow = g.in_w + g.left + g.right;
  const int64_t total = g.batch * g.in_h * g.in_w * g.channels;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = i % g.channels, pixel = i / g.channels;
    const int64_t w = pixel % g.in_w, rest = pixel / g.in_w, h = rest % g.in_h, n = rest / g.in_h;
    int64_t rows[3], cols[3];
    const int row_count = sources(h, g.top, g.bottom, g.in_h, rows);
    const int col_count = sources(w, g.left, g.right, g.in_w, cols);
    float sum = 0.0f;
    for (int a = 0; a < row_count; ++a) {
      for (int b = 0; b < col_count; ++b) sum += to_float(dy[((n * oh + rows[a]) * ow + cols[b]) * g.channels + c]);
    }
    dx[i] = from_float<T>(sum);
  }
}

}  // namespace

template <typename T>
void reflection_pad2d_forward(const T* x, T* y, const cpu::ReflectionPadGeometry& g, cudaStream_t stream) {
  cpu::check_reflection_pad_geometry(g);
  const int64_t total = g.batch * g.out_h() * g.out_w() * g.channels;
  pad_forward_kernel<T><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, y, g);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void reflection_pad2d_backward(const T* dy, T* dx, const cpu::ReflectionPadGeometry& g, cudaStream_t stream) {
  cpu::check_reflection_pad_geometry(g);
  const int64_t total = g.batch * g.in_h * g.in_w * g.channels;
  pad_backward_kernel<T><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(dy, dx, g);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_REFLECTION_PAD(T)                                                                                       \
  template void reflection_pad2d_forward<T>(const T*, T*, const cpu::ReflectionPadGeometry&, cudaStream_t);        \
  template void reflection_pad2d_backward<T>(const T*, T*, const cpu::ReflectionPadGeometry&, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_REFLECTION_PAD)

}  // namespace sb::cuda

// The reflection_pad family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
void bind_reflection_pad_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"reflection_pad2d", SB_TYPED(cuda::reflection_pad2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                   reflection_pad_params(n), e.stream()))},
      {"reflection_pad2d_backward", SB_TYPED(cuda::reflection_pad2d_backward(e.at<T>(n.inputs[0]),
                                                                             e.at<T>(n.outputs[0]), reflection_pad_params(n),
                                                                             e.stream()))},
  });
}

}  // namespace sb::cuda_binding
