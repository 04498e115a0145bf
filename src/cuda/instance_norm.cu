// CUDA instance normalisation (src/cuda/instance_norm.h). Three kernels per pass: chunk partial sums, their
// combination per (sample, channel), and an elementwise pass (normalise, or the input gradient); the first and
// last move 16-byte packs of channels when the rows allow (packed_rows).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/core/ops/instance_norm.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/instance_norm.h"
#include "src/cuda/packs.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// What the partial sums add up per element: the forward pass's shifted value and square, the backward pass's
// dy and dy · x̂.
struct ForwardTerms {
  template <typename T>
  __device__ static void add(const T* x, const T*, const float* shift, const float*, int64_t i, int64_t nc,
                             double& s1, double& s2) {
    const double v = double(to_float(x[i])) - double(shift[nc]);
    s1 += v;
    s2 += v * v;
  }
};
struct BackwardTerms {
  template <typename T>
  __device__ static void add(const T* x, const T* dy, const float* mean, const float* invstd, int64_t i, int64_t nc,
                             double& s1, double& s2) {
    const double g = to_float(dy[i]);
    s1 += g;
    s2 += g * (double(to_float(x[i])) - mean[nc]) * invstd[nc];
  }
};

// Block (chunk, sample): partial sums of one chunk of pixels for every channel. Threads are laid out as
// `lanes` rows of `width` channels (width = min(C, 256)); lanes add their rows, shared memory adds the lanes in
// order. partials[((n · chunks + chunk) · C + c) · 2 + {0, 1}].
template <typename T, typename Terms>
__global__ void partial_sums_kernel(const T* __restrict__ x, const T* __restrict__ dy, const float* __restrict__ a,
                                    const float* __restrict__ b, double* __restrict__ partials, int64_t pixels,
                                    int64_t channels, int64_t chunk_pixels, int64_t chunks) {
  __shared__ double s1_lane[kThreads], s2_lane[kThreads];
  const int64_t chunk = blockIdx.x, n = blockIdx.y;
  const int width = channels < kThreads ? static_cast<int>(channels) : kThreads;
  const int lanes = kThreads / width;
  const int lane = threadIdx.x / width, column = threadIdx.x % width;
  const int64_t begin = chunk * chunk_pixels;
  const int64_t end = begin + chunk_pixels < pixels ? begin + chunk_pixels : pixels;
  const int64_t sample = n * pixels * channels;
  for (int64_t c0 = 0; c0 < channels; c0 += width) {
    const int64_t c = c0 + column;
    double s1 = 0, s2 = 0;
    if (lane < lanes && c < channels) {
      for (int64_t p = begin + lane; p < end; p += lanes) {
        Terms::add(x + sample, dy == nullptr ? nullptr : dy + sample, a, b, p * channels + c, n * channels + c, s1, s2);
      }
    }
    s1_lane[threadIdx.x] = s1;
    s2_lane[threadIdx.x] = s2;
    __syncthreads();
    if (lane == 0 && c < channels) {
      for (int l = 1; l < lanes; ++l) {
        s1 += s1_lane[l * width + column];
        s2 += s2_lane[l * width + column];
      }
      double* out = partials + ((n * chunks + chunk) * channels + c) * 2;
      out[0] = s1;
      out[1] = s2;
    }
    __syncthreads();
  }
}

// The same partial sums with one 16-byte pack of W channels per thread, for rows of a power-of-two number of packs
// (at most kThreads): `packs` columns of packs x kThreads / packs lanes; the lanes are added by a fixed tree
// (the lane count is a power of two too). StyleGAN's 16-channel 1024^2 maps (two bf16 packs a pixel) read 16
// bytes a thread instead of 2.
template <typename T, typename Terms>
__global__ void packed_partial_sums_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                           const float* __restrict__ a, const float* __restrict__ b,
                                           double* __restrict__ partials, int64_t pixels, int64_t channels,
                                           int64_t chunk_pixels, int64_t chunks) {
  constexpr int W = kElementsPer16Bytes<T>;
  __shared__ double s1_lane[kThreads][W], s2_lane[kThreads][W];
  const int64_t chunk = blockIdx.x, n = blockIdx.y;
  const int packs = static_cast<int>(channels / W), lanes = kThreads / packs;
  const int lane = threadIdx.x / packs, column = threadIdx.x % packs;
  const int64_t begin = chunk * chunk_pixels;
  const int64_t end = begin + chunk_pixels < pixels ? begin + chunk_pixels : pixels;
  const int64_t sample = n * pixels * channels, c0 = int64_t(column) * W;
  double s1[W], s2[W];
#pragma unroll
  for (int i = 0; i < W; ++i) s1[i] = s2[i] = 0.0;
  for (int64_t p = begin + lane; p < end; p += lanes) {
    const int64_t at = sample + p * channels + c0;
    const Pack<T, W> xv = *reinterpret_cast<const Pack<T, W>*>(x + at);
    Pack<T, W> gv;
    if (dy != nullptr) gv = *reinterpret_cast<const Pack<T, W>*>(dy + at);
#pragma unroll
    for (int i = 0; i < W; ++i) {
      Terms::add(xv.element + i, dy == nullptr ? nullptr : gv.element + i, a + n * channels + c0 + i,
                 b == nullptr ? nullptr : b + n * channels + c0 + i, 0, 0, s1[i], s2[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < W; ++i) {
    s1_lane[threadIdx.x][i] = s1[i];
    s2_lane[threadIdx.x][i] = s2[i];
  }
  __syncthreads();
  for (int half = lanes / 2; half > 0; half /= 2) {
    if (lane < half) {
#pragma unroll
      for (int i = 0; i < W; ++i) {
        s1_lane[threadIdx.x][i] += s1_lane[threadIdx.x + half * packs][i];
        s2_lane[threadIdx.x][i] += s2_lane[threadIdx.x + half * packs][i];
      }
    }
    __syncthreads();
  }
  if (lane != 0) return;
#pragma unroll
  for (int i = 0; i < W; ++i) {
    double* out = partials + ((n * chunks + chunk) * channels + c0 + i) * 2;
    out[0] = s1_lane[threadIdx.x][i];
    out[1] = s2_lane[threadIdx.x][i];
  }
}

// Block (channel, sample): the chunks' sums added by a fixed tree; writes totals[(n · C + c) · 2 + {0, 1}].
__global__ void combine_kernel(const double* __restrict__ partials, double* __restrict__ totals, int64_t channels,
                               int64_t chunks) {
  __shared__ double s1_thread[kThreads], s2_thread[kThreads];
  const int64_t c = blockIdx.x, n = blockIdx.y;
  double s1 = 0, s2 = 0;
  for (int64_t k = threadIdx.x; k < chunks; k += kThreads) {
    const double* p = partials + ((n * chunks + k) * channels + c) * 2;
    s1 += p[0];
    s2 += p[1];
  }
  s1_thread[threadIdx.x] = s1;
  s2_thread[threadIdx.x] = s2;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      s1_thread[threadIdx.x] += s1_thread[threadIdx.x + half];
      s2_thread[threadIdx.x] += s2_thread[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    totals[(n * channels + c) * 2] = s1_thread[0];
    totals[(n * channels + c) * 2 + 1] = s2_thread[0];
  }
}

// One thread per (sample, channel): mean = shift + S1 / M, var = S2 / M − (S1 / M)², invstd = 1 / sqrt(var + eps).
template <typename T>
__global__ void statistics_kernel(const T* __restrict__ x, const double* __restrict__ totals, float* __restrict__ mean,
                                  float* __restrict__ invstd, int64_t batch, int64_t pixels, int64_t channels,
                                  float epsilon) {
  const int64_t nc = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (nc >= batch * channels) return;
  const int64_t n = nc / channels, c = nc % channels;
  const double shift = to_float(x[n * pixels * channels + c]);
  const double m1 = totals[nc * 2] / double(pixels), m2 = totals[nc * 2 + 1] / double(pixels);
  const double var = m2 - m1 * m1 > 0 ? m2 - m1 * m1 : 0.0;
  mean[nc] = static_cast<float>(shift + m1);
  invstd[nc] = static_cast<float>(1.0 / sqrt(var + double(epsilon)));
}

// The forward shift of each (sample, channel): its first pixel, copied where the partial-sum kernel reads it.
template <typename T>
__global__ void shift_kernel(const T* __restrict__ x, float* __restrict__ shift, int64_t batch, int64_t pixels,
                             int64_t channels) {
  const int64_t nc = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (nc >= batch * channels) return;
  shift[nc] = to_float(x[(nc / channels) * pixels * channels + nc % channels]);
}

template <typename T>
__global__ void normalize_kernel(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ mean,
                                 const float* __restrict__ invstd, int64_t total, int64_t pixels, int64_t channels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t nc = (i / (pixels * channels)) * channels + i % channels;
    y[i] = from_float<T>((to_float(x[i]) - mean[nc]) * invstd[nc]);
  }
}

template <typename T>
__global__ void input_gradient_kernel(const T* __restrict__ dy, const T* __restrict__ x, const float* __restrict__ mean,
                                      const float* __restrict__ invstd, const double* __restrict__ totals,
                                      T* __restrict__ dx, int64_t total, int64_t pixels, int64_t channels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t nc = (i / (pixels * channels)) * channels + i % channels;
    const float mean_dy = static_cast<float>(totals[nc * 2] / double(pixels));
    const float mean_dy_xhat = static_cast<float>(totals[nc * 2 + 1] / double(pixels));
    const float xhat = (to_float(x[i]) - mean[nc]) * invstd[nc];
    dx[i] = from_float<T>(invstd[nc] * (to_float(dy[i]) - mean_dy - xhat * mean_dy_xhat));
  }
}

// normalize_kernel and input_gradient_kernel with one 16-byte pack of channels per thread: one 64-bit division
// per pack instead of two per element. Same arithmetic and rounding.
template <typename T>
__global__ void normalize_packed_kernel(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ mean,
                                        const float* __restrict__ invstd, int64_t vectors, int64_t pixels,
                                        int64_t channels) {
  constexpr int W = kElementsPer16Bytes<T>;
  const int64_t packs = channels / W, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += stride) {
    const int64_t nc = (v / (pixels * packs)) * channels + (v % packs) * W;
    Pack<T, W> value = reinterpret_cast<const Pack<T, W>*>(x)[v];
#pragma unroll
    for (int i = 0; i < W; ++i) {
      value.element[i] = from_float<T>((to_float(value.element[i]) - mean[nc + i]) * invstd[nc + i]);
    }
    reinterpret_cast<Pack<T, W>*>(y)[v] = value;
  }
}

template <typename T>
__global__ void input_gradient_packed_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                             const float* __restrict__ mean, const float* __restrict__ invstd,
                                             const double* __restrict__ totals, T* __restrict__ dx, int64_t vectors,
                                             int64_t pixels, int64_t channels) {
  constexpr int W = kElementsPer16Bytes<T>;
  const int64_t packs = channels / W, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += stride) {
    const int64_t nc0 = (v / (pixels * packs)) * channels + (v % packs) * W;
    const Pack<T, W> xv = reinterpret_cast<const Pack<T, W>*>(x)[v];
    Pack<T, W> g = reinterpret_cast<const Pack<T, W>*>(dy)[v];
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const int64_t nc = nc0 + i;
      const float mean_dy = static_cast<float>(totals[nc * 2] / double(pixels));
      const float mean_dy_xhat = static_cast<float>(totals[nc * 2 + 1] / double(pixels));
      const float xhat = (to_float(xv.element[i]) - mean[nc]) * invstd[nc];
      g.element[i] = from_float<T>(invstd[nc] * (to_float(g.element[i]) - mean_dy - xhat * mean_dy_xhat));
    }
    reinterpret_cast<Pack<T, W>*>(dx)[v] = g;
  }
}

// Whether a pass may take the packed kernels: rows of whole packs, aligned, a power-of-two number of packs that
// fits one block (the partial sums' lane tree).
template <typename T>
bool packed_rows(int64_t channels, std::initializer_list<const void*> pointers) {
  if (!rows_fit_16_byte_packs<T>(channels, pointers)) return false;
  const int64_t packs = channels / kElementsPer16Bytes<T>;
  return packs <= kThreads && (packs & (packs - 1)) == 0;
}

void check_sizes(const char* op, int64_t batch, int64_t pixels, int64_t channels) {
  if (batch < 1 || pixels < 2 || channels < 1 || batch > 65535) {
    throw UsageError(std::string("cuda::") + op + ": needs 1 <= batch <= 65535, pixels >= 2, channels >= 1");
  }
}

// The workspace: partial sums, then the totals.
struct Layout {
  double* partials;
  double* totals;
  int64_t chunk_pixels, chunks;
};
Layout layout(void* workspace, int64_t batch, int64_t pixels, int64_t channels) {
  Layout l;
  l.chunk_pixels = instance_norm_chunk_pixels(pixels, channels);
  l.chunks = instance_norm_chunks(pixels, channels);
  l.partials = static_cast<double*>(workspace);
  l.totals = l.partials + 2 * batch * l.chunks * channels;
  return l;
}

// Terms' two sums per (sample, channel) over the pixels into l.totals: chunk partial sums (in packs of channels
// or not), then the chunks combined.
template <typename T, typename Terms>
void sum_over_pixels(bool packed, const T* x, const T* dy, const float* a, const float* b, const Layout& l,
                     int64_t batch, int64_t pixels, int64_t channels, cudaStream_t stream) {
  const dim3 chunk_grid(unsigned(l.chunks), unsigned(batch));
  if (packed) {
    packed_partial_sums_kernel<T, Terms><<<chunk_grid, kThreads, 0, stream>>>(x, dy, a, b, l.partials, pixels,
                                                                             channels, l.chunk_pixels, l.chunks);
  } else {
    partial_sums_kernel<T, Terms><<<chunk_grid, kThreads, 0, stream>>>(x, dy, a, b, l.partials, pixels, channels,
                                                                      l.chunk_pixels, l.chunks);
  }
  SB_CUDA_CHECK_LAUNCH();
  combine_kernel<<<dim3(unsigned(channels), unsigned(batch)), kThreads, 0, stream>>>(l.partials, l.totals, channels,
                                                                                    l.chunks);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void instance_norm_forward(const T* x, T* y, float* mean, float* invstd, int64_t batch, int64_t pixels,
                           int64_t channels, float epsilon, void* workspace, cudaStream_t stream) {
  check_sizes("instance_norm_forward", batch, pixels, channels);
  const Layout l = layout(workspace, batch, pixels, channels);
  const int64_t pairs = batch * channels;
  const int pair_blocks = static_cast<int>((pairs + kThreads - 1) / kThreads);
  // The shifts go to `mean` first; the statistics kernel overwrites it with the mean.
  shift_kernel<T><<<pair_blocks, kThreads, 0, stream>>>(x, mean, batch, pixels, channels);
  SB_CUDA_CHECK_LAUNCH();
  const bool packed = packed_rows<T>(channels, {x, y});
  sum_over_pixels<T, ForwardTerms>(packed, x, nullptr, mean, nullptr, l, batch, pixels, channels, stream);
  statistics_kernel<T><<<pair_blocks, kThreads, 0, stream>>>(x, l.totals, mean, invstd, batch, pixels, channels,
                                                             epsilon);
  SB_CUDA_CHECK_LAUNCH();
  const int64_t total = batch * pixels * channels;
  if (packed) {
    const int64_t vectors = total / kElementsPer16Bytes<T>;
    normalize_packed_kernel<T><<<detail::grid_stride_blocks(vectors, kThreads), kThreads, 0, stream>>>(
        x, y, mean, invstd, vectors, pixels, channels);
  } else {
    normalize_kernel<T><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, y, mean, invstd,
                                                                                              total, pixels, channels);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void instance_norm_backward(const T* dy, const T* x, const float* mean, const float* invstd, T* dx, int64_t batch,
                            int64_t pixels, int64_t channels, void* workspace, cudaStream_t stream) {
  check_sizes("instance_norm_backward", batch, pixels, channels);
  const Layout l = layout(workspace, batch, pixels, channels);
  const bool packed = packed_rows<T>(channels, {dy, x, dx});
  sum_over_pixels<T, BackwardTerms>(packed, x, dy, mean, invstd, l, batch, pixels, channels, stream);
  const int64_t total = batch * pixels * channels;
  if (packed) {
    const int64_t vectors = total / kElementsPer16Bytes<T>;
    input_gradient_packed_kernel<T><<<detail::grid_stride_blocks(vectors, kThreads), kThreads, 0, stream>>>(
        dy, x, mean, invstd, l.totals, dx, vectors, pixels, channels);
  } else {
    input_gradient_kernel<T><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
        dy, x, mean, invstd, l.totals, dx, total, pixels, channels);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_INSTANCE_NORM(T)                                                                                       \
  template void instance_norm_forward<T>(const T*, T*, float*, float*, int64_t, int64_t, int64_t, float, void*,  \
                                         cudaStream_t);                                                          \
  template void instance_norm_backward<T>(const T*, const T*, const float*, const float*, T*, int64_t, int64_t,  \
                                          int64_t, void*, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_INSTANCE_NORM)

}  // namespace sb::cuda

// The instance_norm family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_instance_norm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"instance_norm", SB_TYPED(cuda::instance_norm_forward(
                            e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), e.at<float>(n.outputs[1]),
                            e.at<float>(n.outputs[2]), size_attr(n, "batch"), size_attr(n, "pixels"),
                            size_attr(n, "channels"), float_attr(n, "epsilon"), e.u8(n.outputs[3]), e.stream()))},
      {"instance_norm_backward", SB_TYPED(cuda::instance_norm_backward(
                                     e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                     e.at<float>(n.inputs[3]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                     size_attr(n, "pixels"), size_attr(n, "channels"), e.u8(n.outputs[1]),
                                     e.stream()))},
  });
}

}  // namespace sb::cuda_binding
