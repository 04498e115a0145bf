// The per-thread work of scalebench's depthwise convolution kernels (src/cuda/depthwise_conv2d.cu) as host/device
// inline functions, so that tests/unit/test_depthwise_conv2d_tiles.cpp runs the very index arithmetic on the CPU
// against the reference convolution (there is no GPU in CI). Depthwise here: groups = in channels = out channels
// (multiplier 1), a square K x K filter, one stride S for both axes, dilation 1; the per-side padding is taken
// directly (the bounds checks read zeros outside the input), so these kernels need no padded copy of x.
// Layouts: x (N, H, W, C), y (N, Ho, Wo, C), w (C, K, K, 1), cuDNN's NHWC filter layout: tap t = r * K + s of
// channel c is w[c * K * K + t].
// Work split: a thread owns V consecutive channels (one vector access along C, the contiguous axis) and a run of
// P consecutive output columns of one output row, so an input column that several of the P outputs read is
// loaded once per filter row; a block stages its slice of channels' weights in shared memory as fp32
// [tap][channel], one vector load per tap.
#pragma once

#include <algorithm>
#include <cstdint>

#include "scalebench/host_device.h"
#include "src/core/ops/conv2d.h"

#if defined(__CUDACC__)
#define SB_DEPTHWISE_UNROLL _Pragma("unroll")
#else
#define SB_DEPTHWISE_UNROLL
#endif

namespace sb::cuda::detail {

// Output columns per thread in the forward and backward-filter passes.
constexpr int kDepthwiseRun = 4;
// Threads per block: (channel packs) x (runs or pixels) <= this.
constexpr int kDepthwiseThreads = 256;
// Shared memory for the staged weights (fp32), the default per-block limit.
constexpr int64_t kDepthwiseStagingBytes = 48 * 1024;

// True when the depthwise kernels run this geometry (otherwise cuDNN does): channel multiplier 1, K x K with K in
// {3, 5, 7}, stride 1 or 2 on both axes, no dilation. Any padding >= 0.
inline bool depthwise_kernels_apply(const Conv2dGeometry& g) {
  const bool depthwise = g.groups == g.in_c && g.out_c == g.in_c && g.groups > 1;
  const bool square = g.kernel_h == g.kernel_w && (g.kernel_h == 3 || g.kernel_h == 5 || g.kernel_h == 7);
  const bool strides = g.stride_h == g.stride_w && (g.stride_h == 1 || g.stride_h == 2);
  return depthwise && square && strides && g.dilation_h == 1 && g.dilation_w == 1;
}

// Conversions of one stored element to and from the fp32 the kernels compute in; bf16 and fp16 are specialised
// in depthwise_conv2d.cu (their conversions come from the CUDA headers).
template <typename T>
struct DepthwiseElement;
template <>
struct DepthwiseElement<float> {
  SB_HOST_DEVICE static float widen(float v) { return v; }
  SB_HOST_DEVICE static float narrow(float v) { return v; }
};

// V consecutive elements moved as one access (aligned as a whole, up to 16 bytes: 8 bf16 are one 16-byte load).
template <typename T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) DepthwisePack {
  T element[V];
};

template <typename T, int V>
SB_HOST_DEVICE inline void load_widened(const T* p, float (&out)[V]) {
  const DepthwisePack<T, V> pack = *reinterpret_cast<const DepthwisePack<T, V>*>(p);
  SB_DEPTHWISE_UNROLL
  for (int v = 0; v < V; ++v) out[v] = DepthwiseElement<T>::widen(pack.element[v]);
}

template <typename T, int V>
SB_HOST_DEVICE inline void store_narrowed(T* p, const float (&in)[V]) {
  DepthwisePack<T, V> pack;
  SB_DEPTHWISE_UNROLL
  for (int v = 0; v < V; ++v) pack.element[v] = DepthwiseElement<T>::narrow(in[v]);
  *reinterpret_cast<DepthwisePack<T, V>*>(p) = pack;
}

// One pass seen as "read `in`, write `out`". The forward and the backward filter use the forward geometry
// (in = x, out = y); the stride-1 backward data is the forward of dy with the filter rotated by 180 degrees and
// pads K - 1 - pad (in = dy, out = dx), see flipped_window.
struct DepthwiseWindow {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0, pad_top = 0, pad_left = 0;
};

inline DepthwiseWindow forward_window(const Conv2dGeometry& g) {
  return {g.batch, g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, g.pad_top, g.pad_left};
}

// dx[ih, iw] = sum over r, s of dy[ih + pad_top - r, iw + pad_left - s] w[r, s] (stride 1) = the forward of dy
// with w'[r', s'] = w[K-1-r', K-1-s'] and pad' = K - 1 - pad (negative pads are only offsets here).
inline DepthwiseWindow flipped_window(const Conv2dGeometry& g) {
  return {g.batch, g.out_h, g.out_w, g.in_c, g.in_h, g.in_w, g.kernel_h - 1 - g.pad_top, g.kernel_w - 1 - g.pad_left};
}

// Runs of P output columns: a row of out_w columns has ceil(out_w / P) of them, the last possibly partial.
template <int P>
SB_HOST_DEVICE inline int64_t output_runs(const DepthwiseWindow& win) {
  return win.batch * win.out_h * ((win.out_w + P - 1) / P);
}

struct OutputRun {
  int64_t n, oh, ow0;
};

template <int P>
SB_HOST_DEVICE inline OutputRun output_run(const DepthwiseWindow& win, int64_t run) {
  const int64_t per_row = (win.out_w + P - 1) / P;
  const int64_t rows = run / per_row;
  return {rows / win.out_h, rows % win.out_h, (run % per_row) * P};
}

// The staged weight of channel c at tap t (fp32): w[c][t], or w[c][K*K-1-t] for the rotated filter of the
// stride-1 backward data; 0 for a channel past the last (the last slice of channels may be partial).
template <typename T>
SB_HOST_DEVICE inline float staged_weight(const T* w, int64_t channels, int taps, int64_t c, int t, bool rotate) {
  if (c >= channels) return 0.0f;
  return DepthwiseElement<T>::widen(w[c * taps + (rotate ? taps - 1 - t : t)]);
}

// The forward pass of one run: out[n, oh, ow0 .. ow0+P-1, c0 .. c0+V-1]. `taps` holds the staged weights of
// channel c0 at taps[t * taps_stride + v]. Every input column of a filter row is loaded once and feeds the
// (at most ceil(K / S)) outputs whose window covers it: (P-1)·S + K loads per row instead of P·K.
template <typename T, int V, int K, int S, int P>
SB_HOST_DEVICE inline void depthwise_forward_run(const T* in, const float* taps, int64_t taps_stride, T* out,
                                                 const DepthwiseWindow& win, int64_t run_index, int64_t c0) {
  const OutputRun run = output_run<P>(win, run_index);
  float acc[P][V];
  SB_DEPTHWISE_UNROLL
  for (int p = 0; p < P; ++p) {
    SB_DEPTHWISE_UNROLL
    for (int v = 0; v < V; ++v) acc[p][v] = 0.0f;
  }
  const int64_t iw0 = run.ow0 * S - win.pad_left;
  SB_DEPTHWISE_UNROLL
  for (int r = 0; r < K; ++r) {
    const int64_t ih = run.oh * S - win.pad_top + r;
    if (ih < 0 || ih >= win.in_h) continue;
    float wr[K][V];
    SB_DEPTHWISE_UNROLL
    for (int s = 0; s < K; ++s) load_widened<float, V>(taps + (r * K + s) * taps_stride, wr[s]);
    const T* row = in + (run.n * win.in_h + ih) * win.in_w * win.channels + c0;
    SB_DEPTHWISE_UNROLL
    for (int j = 0; j < (P - 1) * S + K; ++j) {
      const int64_t iw = iw0 + j;
      if (iw < 0 || iw >= win.in_w) continue;
      float xv[V];
      load_widened<T, V>(row + iw * win.channels, xv);
      SB_DEPTHWISE_UNROLL
      for (int p = 0; p < P; ++p) {
        const int s = j - p * S;  // the tap of output ow0 + p that reads this column
        if (s < 0 || s >= K) continue;
        SB_DEPTHWISE_UNROLL
        for (int v = 0; v < V; ++v) acc[p][v] += xv[v] * wr[s][v];
      }
    }
  }
  T* out_row = out + (run.n * win.out_h + run.oh) * win.out_w * win.channels + c0;
  SB_DEPTHWISE_UNROLL
  for (int p = 0; p < P; ++p) {
    if (run.ow0 + p < win.out_w) store_narrowed<T, V>(out_row + (run.ow0 + p) * win.channels, acc[p]);
  }
}

// The backward data of one input pixel (any stride; used for stride 2) as a gather over the outputs that read
// it: dx[n, ih, iw, c0 ..] = sum over taps (r, s) with ih + pad_top - r = oh·S, iw + pad_left - s = ow·S inside
// the output of dy[n, oh, ow] w[r, s]. `win` is the forward window (in = x, out = y); `taps` unrotated. No
// atomics: each dx element is written by one thread.
template <typename T, int V, int K, int S>
SB_HOST_DEVICE inline void depthwise_backward_data_pixel(const T* dy, const float* taps, int64_t taps_stride, T* dx,
                                                         const DepthwiseWindow& win, int64_t pixel, int64_t c0) {
  const int64_t iw = pixel % win.in_w, rest = pixel / win.in_w;
  const int64_t ih = rest % win.in_h, n = rest / win.in_h;
  float acc[V];
  SB_DEPTHWISE_UNROLL
  for (int v = 0; v < V; ++v) acc[v] = 0.0f;
  SB_DEPTHWISE_UNROLL
  for (int r = 0; r < K; ++r) {
    const int64_t th = ih + win.pad_top - r;  // oh · S
    if (th < 0 || th % S != 0 || th / S >= win.out_h) continue;
    const T* dy_row = dy + (n * win.out_h + th / S) * win.out_w * win.channels + c0;
    SB_DEPTHWISE_UNROLL
    for (int s = 0; s < K; ++s) {
      const int64_t tw = iw + win.pad_left - s;  // ow · S
      if (tw < 0 || tw % S != 0 || tw / S >= win.out_w) continue;
      float g[V], wv[V];
      load_widened<T, V>(dy_row + (tw / S) * win.channels, g);
      load_widened<float, V>(taps + (r * K + s) * taps_stride, wv);
      SB_DEPTHWISE_UNROLL
      for (int v = 0; v < V; ++v) acc[v] += g[v] * wv[v];
    }
  }
  store_narrowed<T, V>(dx + pixel * win.channels + c0, acc);
}

// The backward filter's share of one run: acc[t][v] += sum over the run's outputs (n, oh, ow) of
// dy[n, oh, ow, c0 + v] · x[n, oh·S - pad_top + r, ow·S - pad_left + s, c0 + v], t = r·K + s. The run's dy
// (P x V) is held in registers and each input column of a filter row is loaded once, as in the forward.
template <typename T, int V, int K, int S, int P>
SB_HOST_DEVICE inline void depthwise_filter_run(const T* x, const T* dy, const DepthwiseWindow& win,
                                                int64_t run_index, int64_t c0, float (&acc)[K * K][V]) {
  const OutputRun run = output_run<P>(win, run_index);
  float g[P][V];
  const T* dy_row = dy + (run.n * win.out_h + run.oh) * win.out_w * win.channels + c0;
  SB_DEPTHWISE_UNROLL
  for (int p = 0; p < P; ++p) {
    if (run.ow0 + p < win.out_w) {
      load_widened<T, V>(dy_row + (run.ow0 + p) * win.channels, g[p]);
    } else {
      SB_DEPTHWISE_UNROLL
      for (int v = 0; v < V; ++v) g[p][v] = 0.0f;
    }
  }
  const int64_t iw0 = run.ow0 * S - win.pad_left;
  SB_DEPTHWISE_UNROLL
  for (int r = 0; r < K; ++r) {
    const int64_t ih = run.oh * S - win.pad_top + r;
    if (ih < 0 || ih >= win.in_h) continue;
    const T* row = x + (run.n * win.in_h + ih) * win.in_w * win.channels + c0;
    SB_DEPTHWISE_UNROLL
    for (int j = 0; j < (P - 1) * S + K; ++j) {
      const int64_t iw = iw0 + j;
      if (iw < 0 || iw >= win.in_w) continue;
      float xv[V];
      load_widened<T, V>(row + iw * win.channels, xv);
      SB_DEPTHWISE_UNROLL
      for (int p = 0; p < P; ++p) {
        const int s = j - p * S;
        if (s < 0 || s >= K) continue;
        SB_DEPTHWISE_UNROLL
        for (int v = 0; v < V; ++v) acc[r * K + s][v] += xv[v] * g[p][v];
      }
    }
  }
}

// The backward filter's partial sums in the workspace: one fp32 per (block along the runs, tap, channel), the
// channel fastest so that a block's writes and the finalize kernel's reads are coalesced.
SB_HOST_DEVICE inline int64_t filter_partial_index(int64_t block, int64_t tap, int64_t c, int64_t taps,
                                                   int64_t channels) {
  return (block * taps + tap) * channels + c;
}

// The block shape: tx threads along the channels (V each), ty along the runs or pixels, `slices` blocks along
// the channels (gridDim.y). tx is at most max_tx; the fewest slices that allows, then the smallest tx for them,
// so that few threads sit past the last channel (C = 864, V = 8: 108 packs, 4 slices of 27).
struct DepthwiseBlockShape {
  int tx = 1, ty = 1;
  int64_t slices = 1;
};

inline DepthwiseBlockShape depthwise_block_shape(int64_t channels, int v, int max_tx) {
  const int64_t packs = channels / v;
  DepthwiseBlockShape shape;
  shape.slices = (packs + max_tx - 1) / max_tx;
  shape.tx = static_cast<int>((packs + shape.slices - 1) / shape.slices);
  shape.ty = std::max(1, kDepthwiseThreads / shape.tx);
  return shape;
}

// max_tx for a pass that stages K·K fp32 weights per channel: 32 threads, fewer when their V·32 channels' weights
// would not fit the shared-memory budget (K = 7, V = 8: 31).
inline int staging_max_tx(int k, int v) {
  return static_cast<int>(std::min<int64_t>(32, kDepthwiseStagingBytes / (int64_t(k) * k * v * 4)));
}

// The widest vector (elements) of `element_bytes`-sized elements, at most 16 bytes and at most `cap`, that divides
// the channel count and every address's alignment (alignment = the largest power of two dividing them all).
inline int depthwise_vector_width(int64_t channels, uint64_t element_bytes, uint64_t alignment, int cap) {
  int v = static_cast<int>(std::min<uint64_t>(16 / element_bytes, uint64_t(cap)));
  while (v > 1 && (channels % v != 0 || alignment % (v * element_bytes) != 0)) v /= 2;
  return v;
}

// The backward filter's vector width cap: its K·K·V accumulators stay in registers (3 x 3: 36, 5 x 5: 50,
// 7 x 7: 98 floats).
constexpr int filter_vector_cap(int k) { return k == 3 ? 4 : 2; }

// Blocks along the runs of the backward filter pass (gridDim.x). Fixed once per node: the partial sums' layout
// and their summation order follow from it (deterministic run to run). About two resident blocks per SM over
// all slices (the pass holds ~130 registers per thread), no more than the runs need, and no more than
// `workspace_bytes` of partials hold; 0 when not even one block's partials fit (cuDNN runs the pass then).
inline int64_t depthwise_filter_blocks(const Conv2dGeometry& g, uint64_t element_bytes, uint64_t workspace_bytes,
                                       int multiprocessors) {
  const int v = depthwise_vector_width(g.in_c, element_bytes, 16, filter_vector_cap(int(g.kernel_h)));
  const DepthwiseBlockShape shape = depthwise_block_shape(g.in_c, v, 32);
  const int64_t runs = output_runs<kDepthwiseRun>(forward_window(g));
  const int64_t needed = (runs + shape.ty - 1) / shape.ty;
  const int64_t resident = std::max<int64_t>(1, 2 * int64_t(multiprocessors) / shape.slices);
  const uint64_t per_block = uint64_t(g.kernel_h * g.kernel_w * g.in_c) * sizeof(float);
  return std::min<int64_t>({needed, resident, int64_t(workspace_bytes / per_block)});
}

inline uint64_t depthwise_filter_workspace_bytes(const Conv2dGeometry& g, int64_t blocks) {
  return uint64_t(blocks * g.kernel_h * g.kernel_w * g.in_c) * sizeof(float);
}

}  // namespace sb::cuda::detail
