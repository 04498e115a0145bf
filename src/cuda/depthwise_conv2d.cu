// Depthwise convolution kernels (depthwise_conv2d.h); the per-thread work is in depthwise_conv2d_tiles.h.
// Blocks are (tx channel packs) x (ty runs or pixels), gridDim.y slices of tx·V channels, gridDim.x grid-strides
// over the runs. Each block first stages its slice's weights in shared memory as fp32 [tap][channel]
// (K·K·tx·V·4 bytes, at most 48 KiB), so a thread reads a tap's V weights with one vector load; grids are capped
// near one full wave so that the staging is paid once per block, not once per run.
// V, K and S are template parameters (the unrolled loops keep the accumulators in registers); V is chosen per
// call from the channel count and the pointers' alignment, so any C runs (C = 42: V = 2 for bf16).
#include <algorithm>
#include <string>
#include <type_traits>

#include "scalebench/error.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/depthwise_conv2d.h"
#include "src/cuda/depthwise_conv2d_tiles.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace detail {

template <>
struct DepthwiseElement<bf16> {
  __host__ __device__ static float widen(bf16 v) { return to_float(v); }
  __host__ __device__ static bf16 narrow(float v) { return from_float<bf16>(v); }
};
template <>
struct DepthwiseElement<fp16> {
  __host__ __device__ static float widen(fp16 v) { return to_float(v); }
  __host__ __device__ static fp16 narrow(float v) { return from_float<fp16>(v); }
};

}  // namespace detail

namespace {

using detail::DepthwiseBlockShape;
using detail::DepthwiseWindow;
using detail::kDepthwiseRun;

// Dynamic shared memory, 16-byte aligned for the vector loads of the staged weights.
extern __shared__ float4 depthwise_shared[];

// staged[t * tx·V + local channel] for the block's slice of channels (rotated for the stride-1 backward data).
template <typename T, int K>
__device__ void stage_weights(const T* __restrict__ w, float* staged, int64_t channels, int slice_channels,
                              bool rotate) {
  const int64_t first = int64_t(blockIdx.y) * slice_channels;
  const int threads = blockDim.x * blockDim.y;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < K * K * slice_channels; i += threads) {
    staged[i] = detail::staged_weight(w, channels, K * K, first + i % slice_channels, i / slice_channels, rotate);
  }
  __syncthreads();
}

template <typename T, int V, int K, int S>
__global__ void __launch_bounds__(detail::kDepthwiseThreads)
    forward_kernel(const T* __restrict__ in, const T* __restrict__ w, T* __restrict__ out, DepthwiseWindow win,
                   bool rotate) {
  float* staged = reinterpret_cast<float*>(depthwise_shared);
  const int slice_channels = blockDim.x * V;
  stage_weights<T, K>(w, staged, win.channels, slice_channels, rotate);
  const int64_t c0 = int64_t(blockIdx.y) * slice_channels + threadIdx.x * V;
  if (c0 >= win.channels) return;
  const int64_t runs = detail::output_runs<kDepthwiseRun>(win);
  for (int64_t run = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; run < runs;
       run += int64_t(gridDim.x) * blockDim.y) {
    detail::depthwise_forward_run<T, V, K, S, kDepthwiseRun>(in, staged + threadIdx.x * V, slice_channels, out, win,
                                                             run, c0);
  }
}

template <typename T, int V, int K, int S>
__global__ void __launch_bounds__(detail::kDepthwiseThreads)
    backward_data_kernel(const T* __restrict__ dy, const T* __restrict__ w, T* __restrict__ dx, DepthwiseWindow win) {
  float* staged = reinterpret_cast<float*>(depthwise_shared);
  const int slice_channels = blockDim.x * V;
  stage_weights<T, K>(w, staged, win.channels, slice_channels, false);
  const int64_t c0 = int64_t(blockIdx.y) * slice_channels + threadIdx.x * V;
  if (c0 >= win.channels) return;
  const int64_t pixels = win.batch * win.in_h * win.in_w;
  for (int64_t pixel = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; pixel < pixels;
       pixel += int64_t(gridDim.x) * blockDim.y) {
    detail::depthwise_backward_data_pixel<T, V, K, S>(dy, staged + threadIdx.x * V, slice_channels, dx, win, pixel,
                                                      c0);
  }
}

// Each thread sums its runs; the ty threads of a channel pack are then added in lane order in shared memory,
// tap by tap, and lane 0 writes the block's partial. Threads past the last channel add zeros and take part in
// the barriers.
template <typename T, int V, int K, int S>
__global__ void __launch_bounds__(detail::kDepthwiseThreads)
    filter_partial_kernel(const T* __restrict__ x, const T* __restrict__ dy, float* __restrict__ partials,
                          DepthwiseWindow win) {
  float* lanes = reinterpret_cast<float*>(depthwise_shared);  // [ty][tx·V]
  const int slice_channels = blockDim.x * V;
  const int64_t c0 = int64_t(blockIdx.y) * slice_channels + threadIdx.x * V;
  const bool active = c0 < win.channels;
  float acc[K * K][V];
#pragma unroll
  for (int t = 0; t < K * K; ++t) {
#pragma unroll
    for (int v = 0; v < V; ++v) acc[t][v] = 0.0f;
  }
  if (active) {
    const int64_t runs = detail::output_runs<kDepthwiseRun>(win);
    for (int64_t run = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; run < runs;
         run += int64_t(gridDim.x) * blockDim.y) {
      detail::depthwise_filter_run<T, V, K, S, kDepthwiseRun>(x, dy, win, run, c0, acc);
    }
  }
  float* mine = lanes + threadIdx.y * slice_channels + threadIdx.x * V;
#pragma unroll
  for (int t = 0; t < K * K; ++t) {
#pragma unroll
    for (int v = 0; v < V; ++v) mine[v] = acc[t][v];
    __syncthreads();
    if (threadIdx.y == 0 && active) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float sum = 0.0f;
        for (int lane = 0; lane < int(blockDim.y); ++lane) sum += lanes[lane * slice_channels + threadIdx.x * V + v];
        partials[detail::filter_partial_index(blockIdx.x, t, c0 + v, K * K, win.channels)] = sum;
      }
    }
    __syncthreads();
  }
}

// dw[c, t] = the blocks' partials of (t, c) added in block order, in double, rounded once to T.
template <typename T>
__global__ void filter_finalize_kernel(const float* __restrict__ partials, T* __restrict__ dw, int64_t blocks,
                                       int64_t taps, int64_t channels) {
  const int64_t total = taps * channels;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / channels, c = i % channels;
    double sum = 0.0;
    for (int64_t b = 0; b < blocks; ++b) sum += partials[detail::filter_partial_index(b, t, c, taps, channels)];
    dw[c * taps + t] = detail::DepthwiseElement<T>::narrow(static_cast<float>(sum));
  }
}

template <int N>
using Constant = std::integral_constant<int, N>;

// Calls f(Constant<V>) for the runtime vector width v (1, 2, 4, or 8 for 16-bit T).
template <typename T, typename F>
void with_width(int v, F&& f) {
  switch (v) {
    case 1: return f(Constant<1>{});
    case 2: return f(Constant<2>{});
    case 4: return f(Constant<4>{});
    case 8:
      if constexpr (sizeof(T) <= 2) return f(Constant<8>{});
      break;
  }
  throw UsageError("depthwise conv2d: no vector width " + std::to_string(v) + " for this element size");
}

// Calls f(Constant<K>, Constant<S>) for the geometry's filter size and stride.
template <typename F>
void with_window(const Conv2dGeometry& g, F&& f) {
  if (!detail::depthwise_kernels_apply(g)) {
    throw UsageError("depthwise conv2d: the geometry is not one these kernels run (K x K in {3, 5, 7}, stride 1 or "
                     "2, dilation 1, one filter per channel)");
  }
  auto with_stride = [&](auto k) {
    if (g.stride_h == 1) return f(k, Constant<1>{});
    return f(k, Constant<2>{});
  };
  if (g.kernel_h == 3) return with_stride(Constant<3>{});
  if (g.kernel_h == 5) return with_stride(Constant<5>{});
  return with_stride(Constant<7>{});
}

// The largest power of two dividing every address (their vector accesses must be aligned).
uint64_t common_alignment(std::initializer_list<const void*> pointers) {
  uint64_t bits = 0;
  for (const void* p : pointers) bits |= reinterpret_cast<uintptr_t>(p);
  return bits == 0 ? 16 : (bits & (~bits + 1));
}

// gridDim.x for `units` runs or pixels: what they need, at most about one full wave over all slices.
int grid_blocks(int64_t units, const DepthwiseBlockShape& shape) {
  const int64_t needed = (units + shape.ty - 1) / shape.ty;
  const int64_t wave = int64_t(detail::multiprocessor_count()) * (2048 / (shape.tx * shape.ty)) / shape.slices;
  return static_cast<int>(std::max<int64_t>(1, std::min(needed, wave)));
}

void check_slices(const DepthwiseBlockShape& shape) {
  if (shape.slices > 65535) throw UsageError("depthwise conv2d: too many channels for the grid");
}

// The forward kernel over `win` (the forward, or the rotated filter of the stride-1 backward data).
template <typename T>
void launch_forward(const T* in, const T* w, T* out, const Conv2dGeometry& g, const DepthwiseWindow& win, bool rotate,
                    cudaStream_t stream) {
  const int width = detail::depthwise_vector_width(win.channels, sizeof(T), common_alignment({in, out}), 8);
  with_width<T>(width, [&](auto v_constant) {
    constexpr int V = decltype(v_constant)::value;
    with_window(g, [&](auto k_constant, auto s_constant) {
      constexpr int K = decltype(k_constant)::value, S = decltype(s_constant)::value;
      const DepthwiseBlockShape shape = detail::depthwise_block_shape(win.channels, V, detail::staging_max_tx(K, V));
      check_slices(shape);
      const size_t shared = size_t(K) * K * shape.tx * V * sizeof(float);
      const dim3 grid(grid_blocks(detail::output_runs<kDepthwiseRun>(win), shape), unsigned(shape.slices));
      forward_kernel<T, V, K, S><<<grid, dim3(shape.tx, shape.ty), shared, stream>>>(in, w, out, win, rotate);
      SB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace

int64_t depthwise_filter_blocks_here(const Conv2dGeometry& g, uint64_t element_bytes, uint64_t workspace_bytes) {
  return detail::depthwise_filter_blocks(g, element_bytes, workspace_bytes, detail::multiprocessor_count());
}

template <typename T>
void depthwise_conv2d_forward(const T* x, const T* w, T* y, const Conv2dGeometry& g, cudaStream_t stream) {
  launch_forward(x, w, y, g, detail::forward_window(g), false, stream);
}

template <typename T>
void depthwise_conv2d_backward_data(const T* dy, const T* w, T* dx, const Conv2dGeometry& g, cudaStream_t stream) {
  if (g.stride_h == 1) return launch_forward(dy, w, dx, g, detail::flipped_window(g), true, stream);
  const DepthwiseWindow win = detail::forward_window(g);
  const int width = detail::depthwise_vector_width(win.channels, sizeof(T), common_alignment({dy, dx}), 8);
  with_width<T>(width, [&](auto v_constant) {
    constexpr int V = decltype(v_constant)::value;
    with_window(g, [&](auto k_constant, auto s_constant) {
      constexpr int K = decltype(k_constant)::value, S = decltype(s_constant)::value;
      if constexpr (S == 2) {  // stride 1 returned above: no gather kernels compiled for it
        const DepthwiseBlockShape shape = detail::depthwise_block_shape(win.channels, V, detail::staging_max_tx(K, V));
        check_slices(shape);
        const size_t shared = size_t(K) * K * shape.tx * V * sizeof(float);
        const dim3 grid(grid_blocks(win.batch * win.in_h * win.in_w, shape), unsigned(shape.slices));
        backward_data_kernel<T, V, K, S><<<grid, dim3(shape.tx, shape.ty), shared, stream>>>(dy, w, dx, win);
        SB_CUDA_CHECK_LAUNCH();
      }
    });
  });
}

template <typename T>
void depthwise_conv2d_backward_filter(const T* x, const T* dy, T* dw, const Conv2dGeometry& g, int64_t blocks,
                                      float* partials, cudaStream_t stream) {
  if (blocks < 1) throw UsageError("depthwise conv2d: the backward filter needs at least one block of partials");
  const DepthwiseWindow win = detail::forward_window(g);
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int cap = detail::filter_vector_cap(int(g.kernel_h));
  const int width = detail::depthwise_vector_width(win.channels, sizeof(T), common_alignment({x, dy}), cap);
  with_width<T>(width, [&](auto v_constant) {
    constexpr int V = decltype(v_constant)::value;
    with_window(g, [&](auto k_constant, auto s_constant) {
      constexpr int K = decltype(k_constant)::value, S = decltype(s_constant)::value;
      if constexpr (V <= detail::filter_vector_cap(K)) {  // wider packs never run: K·K·V accumulators
        const DepthwiseBlockShape shape = detail::depthwise_block_shape(win.channels, V, 32);
        check_slices(shape);
        const size_t shared = size_t(shape.ty) * shape.tx * V * sizeof(float);
        const dim3 grid(unsigned(blocks), unsigned(shape.slices));
        filter_partial_kernel<T, V, K, S><<<grid, dim3(shape.tx, shape.ty), shared, stream>>>(x, dy, partials, win);
        SB_CUDA_CHECK_LAUNCH();
      } else {
        throw UsageError("depthwise conv2d: vector width " + std::to_string(V) + " exceeds the filter pass's cap");
      }
    });
  });
  constexpr int kThreads = 256;
  filter_finalize_kernel<T><<<detail::grid_stride_blocks(taps * win.channels, kThreads), kThreads, 0, stream>>>(
      partials, dw, blocks, taps, win.channels);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_DEPTHWISE(T)                                                                                        \
  template void depthwise_conv2d_forward<T>(const T*, const T*, T*, const Conv2dGeometry&, cudaStream_t);      \
  template void depthwise_conv2d_backward_data<T>(const T*, const T*, T*, const Conv2dGeometry&, cudaStream_t); \
  template void depthwise_conv2d_backward_filter<T>(const T*, const T*, T*, const Conv2dGeometry&, int64_t,     \
                                                    float*, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_DEPTHWISE)
#undef SB_DEPTHWISE

}  // namespace sb::cuda
