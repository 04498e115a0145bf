// Pooling kernels (pooling.h). Channels are the fastest index, so consecutive threads read consecutive
// channels of one pixel (coalesced in NHWC).
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"
#include "src/cuda/pooling.h"
#include "src/core/ops/conv2d.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// Plain-old-data copy of the geometry for kernel arguments.
struct Window {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
};

Window window_of(const Conv2dGeometry& g) {
  return Window{g.batch, g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, g.kernel_h, g.kernel_w,
                g.stride_h, g.stride_w, g.pad_top, g.pad_left};
}

__device__ inline int64_t window_count(const Window& g, int64_t oh, int64_t ow, bool include_pad) {
  if (include_pad) return g.kh * g.kw;
  const int64_t h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  return (min(h0 + g.kh, g.h) - max(h0, int64_t(0))) * (min(w0 + g.kw, g.w) - max(w0, int64_t(0)));
}

// The outputs whose window covers input index i along one axis: [first, last], empty when last < first. A
// negative pad (a crop) leaves the first input indices in no window: i + pad < 0 gives last = -1 (C++'s
// division truncates toward zero, which would wrongly give 0).
__device__ inline void covering(int64_t i, int64_t pad, int64_t kernel, int64_t stride, int64_t outputs,
                                int64_t* first, int64_t* last) {
  const int64_t low = i + pad - kernel + 1;
  *first = low <= 0 ? 0 : (low + stride - 1) / stride;
  *last = i + pad < 0 ? -1 : min(outputs - 1, (i + pad) / stride);
}

// Each thread takes a pack of W consecutive channels of one output pixel (one 16-byte access when the channels
// and pointers allow, see max_pool2d_forward): the window's position arithmetic (64-bit divisions) is done once
// per pack. Per element it made the ResNet stem's pool of (16, 400, 672, 64) bf16 take 2.4 ms on H200. Every lane
// keeps the first maximum of its window, as the CPU does.
template <typename T, int W>
__global__ void max_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int32_t* __restrict__ argmax,
                                   Window g) {
  const int64_t channel_packs = g.c / W, total = g.n * g.oh * g.ow * channel_packs;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i % channel_packs) * W, pixel = i / channel_packs;
    const int64_t ow = pixel % g.ow, oh = (pixel / g.ow) % g.oh, n = pixel / (g.ow * g.oh);
    float best[W];
    Pack<T, W> best_value;
    Pack<int32_t, W> where;
#pragma unroll
    for (int j = 0; j < W; ++j) best[j] = 0.0f, best_value.element[j] = from_float<T>(0.0f), where.element[j] = -1;
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = oh * g.sh - g.pt + r;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.kw; ++s) {
        const int64_t iw = ow * g.sw - g.pl + s;
        if (iw < 0 || iw >= g.w) continue;
        const Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(x + ((n * g.h + ih) * g.w + iw) * g.c + c);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          if (where.element[j] < 0 || to_float(v.element[j]) > best[j]) {
            best[j] = to_float(v.element[j]);
            best_value.element[j] = v.element[j];
            where.element[j] = int32_t(ih * g.w + iw);
          }
        }
      }
    }
    *reinterpret_cast<Pack<T, W>*>(y + pixel * g.c + c) = best_value;
    *reinterpret_cast<Pack<int32_t, W>*>(argmax + pixel * g.c + c) = where;
  }
}

template <typename T>
__global__ void max_backward_kernel(const T* __restrict__ dy, const int32_t* __restrict__ argmax, T* __restrict__ dx,
                                    Window g) {
  const int64_t total = g.n * g.h * g.w * g.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.c, iw = (i / g.c) % g.w, ih = (i / (g.c * g.w)) % g.h, n = i / (g.c * g.w * g.h);
    int64_t oh0, oh1, ow0, ow1;
    covering(ih, g.pt, g.kh, g.sh, g.oh, &oh0, &oh1);
    covering(iw, g.pl, g.kw, g.sw, g.ow, &ow0, &ow1);
    const int32_t self = int32_t(ih * g.w + iw);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = ((n * g.oh + oh) * g.ow + ow) * g.c + c;
        if (argmax[o] == self) sum += to_float(dy[o]);
      }
    }
    dx[i] = from_float<T>(sum);
  }
}

template <typename T>
__global__ void avg_forward_kernel(const T* __restrict__ x, T* __restrict__ y, Window g, bool include_pad) {
  const int64_t total = g.n * g.oh * g.ow * g.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.c, ow = (i / g.c) % g.ow, oh = (i / (g.c * g.ow)) % g.oh, n = i / (g.c * g.ow * g.oh);
    float sum = 0.0f;
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = oh * g.sh - g.pt + r;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.kw; ++s) {
        const int64_t iw = ow * g.sw - g.pl + s;
        if (iw >= 0 && iw < g.w) sum += to_float(x[((n * g.h + ih) * g.w + iw) * g.c + c]);
      }
    }
    y[i] = from_float<T>(sum / float(window_count(g, oh, ow, include_pad)));
  }
}

template <typename T>
__global__ void avg_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, Window g, bool include_pad) {
  const int64_t total = g.n * g.h * g.w * g.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.c, iw = (i / g.c) % g.w, ih = (i / (g.c * g.w)) % g.h, n = i / (g.c * g.w * g.h);
    int64_t oh0, oh1, ow0, ow1;
    covering(ih, g.pt, g.kh, g.sh, g.oh, &oh0, &oh1);
    covering(iw, g.pl, g.kw, g.sw, g.ow, &ow0, &ow1);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        sum += to_float(dy[((n * g.oh + oh) * g.ow + ow) * g.c + c]) / float(window_count(g, oh, ow, include_pad));
      }
    }
    dx[i] = from_float<T>(sum);
  }
}

int blocks(int64_t items) { return detail::grid_stride_blocks(items, kThreads); }

}  // namespace

template <typename T>
void max_pool2d_forward(const T* x, T* y, int32_t* argmax, const Conv2dGeometry& g, cudaStream_t stream) {
  if (g.y_elements() == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(g.in_c, {x, y, argmax})) {
    max_forward_kernel<T, kWidth><<<blocks(g.y_elements() / kWidth), kThreads, 0, stream>>>(x, y, argmax, window_of(g));
  } else {
    max_forward_kernel<T, 1><<<blocks(g.y_elements()), kThreads, 0, stream>>>(x, y, argmax, window_of(g));
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void max_pool2d_backward(const T* dy, const int32_t* argmax, T* dx, const Conv2dGeometry& g, cudaStream_t stream) {
  if (g.x_elements() == 0) return;
  max_backward_kernel<<<blocks(g.x_elements()), kThreads, 0, stream>>>(dy, argmax, dx, window_of(g));
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void avg_pool2d_forward(const T* x, T* y, const Conv2dGeometry& g, bool count_include_pad, cudaStream_t stream) {
  if (g.y_elements() == 0) return;
  avg_forward_kernel<<<blocks(g.y_elements()), kThreads, 0, stream>>>(x, y, window_of(g), count_include_pad);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const Conv2dGeometry& g, bool count_include_pad, cudaStream_t stream) {
  if (g.x_elements() == 0) return;
  avg_backward_kernel<<<blocks(g.x_elements()), kThreads, 0, stream>>>(dy, dx, window_of(g), count_include_pad);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_POOLING(T)                                                                                         \
  template void max_pool2d_forward<T>(const T*, T*, int32_t*, const Conv2dGeometry&, cudaStream_t);           \
  template void max_pool2d_backward<T>(const T*, const int32_t*, T*, const Conv2dGeometry&, cudaStream_t);    \
  template void avg_pool2d_forward<T>(const T*, T*, const Conv2dGeometry&, bool, cudaStream_t);               \
  template void avg_pool2d_backward<T>(const T*, T*, const Conv2dGeometry&, bool, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_POOLING)

}  // namespace sb::cuda

// The pooling family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_pooling_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"max_pool2d", SB_TYPED(cuda::max_pool2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       e.at<int32_t>(n.outputs[1]), conv2d_geometry(n.attributes),
                                                       e.stream()))},
      {"max_pool2d_backward", SB_TYPED(cuda::max_pool2d_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                                                 e.at<T>(n.outputs[0]), conv2d_geometry(n.attributes),
                                                                 e.stream()))},
      {"avg_pool2d", SB_TYPED(cuda::avg_pool2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       conv2d_geometry(n.attributes),
                                                       size_attr(n, "count_include_pad") != 0, e.stream()))},
      {"avg_pool2d_backward", SB_TYPED(cuda::avg_pool2d_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                 conv2d_geometry(n.attributes),
                                                                 size_attr(n, "count_include_pad") != 0,
                                                                 e.stream()))},
  });
}

}  // namespace sb::cuda_binding
