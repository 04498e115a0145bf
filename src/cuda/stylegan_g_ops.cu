// CUDA kernels of StyleGAN's generator ops (src/cuda/stylegan_g_ops.h).
#include <cuda_runtime.h>

#include "scalebench/error.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/style_modulation.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"
#include "src/cuda/stylegan_g_ops.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// Rows of fewer than 32 16-byte packs, aligned: the noise kernels then give each lane one pack of a pixel.
template <typename T>
bool narrow_packed_rows(int64_t channels, std::initializer_list<const void*> pointers) {
  return rows_fit_16_byte_packs<T>(channels, pointers) && channels / kElementsPer16Bytes<T> < 32;
}

#define SB_GRID_STRIDE(i, total)                                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// One thread per row: the mapping network's latents are (batch, 512), a few dozen rows.
template <typename T>
__global__ void pixel_norm_forward_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  SB_GRID_STRIDE(r, rows) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = to_float(x[r * cols + c]);
      sum += v * v;
    }
    const double scale = 1.0 / sqrt(sum / double(cols) + 1e-8);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = from_float<T>(static_cast<float>(to_float(x[r * cols + c]) * scale));
  }
}

template <typename T>
__global__ void pixel_norm_backward_kernel(const T* x, const T* dy, T* dx, int64_t rows, int64_t cols) {
  SB_GRID_STRIDE(r, rows) {
    double sum = 0, dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = to_float(x[r * cols + c]);
      sum += v * v;
      dot += double(to_float(dy[r * cols + c])) * v;
    }
    const double scale = 1.0 / sqrt(sum / double(cols) + 1e-8);
    const double cube = scale * scale * scale * dot / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] =
          from_float<T>(static_cast<float>(scale * to_float(dy[r * cols + c]) - cube * to_float(x[r * cols + c])));
    }
  }
}

// One warp per run of 32 pixels of a sample: lane l draws pixel p0 + l's noise once (every channel shares it; the
// draw, Philox and a double log and cos, costs more than the memory traffic), then the warp writes the run's
// pixels, each pixel's noise from its lane by shuffle. One element a lane (kPacked false): pixel after pixel,
// consecutive lanes on consecutive channels. Narrow rows in packs (kPacked: P = channels / W 16-byte packs a
// pixel, P < 32; StyleGAN's 1024^2 layers have 16 channels, two bf16 packs): lane l moves pack l % P of pixel
// j0 + l / P, so one warp access covers 32 / P pixels (up to 512 contiguous bytes) instead of one pixel's channels
// with most lanes idle (that took ~1.5 ms per 16 x 1024^2 x 16 bf16 layer, 13.9 ms of a 226 ms step). Same
// rounding either way.
template <typename T, bool kPacked>
__global__ void noise_forward_kernel(const T* x, const float* weight, const int32_t* sample_ids, T* y, int64_t batch,
                                     int64_t pixels, int64_t channels, uint64_t seed, StepValue step_offset) {
  constexpr int W = kElementsPer16Bytes<T>;
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t runs = (pixels + 31) / 32;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) / 32;
  for (int64_t run = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; run < batch * runs;
       run += warps) {  // the same run for the whole warp
    const int64_t n = run / runs, p0 = (run % runs) * 32;
    const float mine = p0 + lane < pixels
                           ? cpu::noise_value(seed, offset, static_cast<uint32_t>(sample_ids[n]), p0 + lane)
                           : 0.0f;
    const int count = static_cast<int>(pixels - p0 < 32 ? pixels - p0 : 32);
    if constexpr (kPacked) {
      const int packs = static_cast<int>(channels / W), per_access = 32 / packs;
      const int pack = lane % packs, sub = lane / packs;
      for (int j0 = 0; j0 < count; j0 += per_access) {
        const int j = j0 + sub;
        const float noise = __shfl_sync(0xffffffffu, mine, j % 32);  // every lane shuffles; idle ones drop it
        if (sub >= per_access || j >= count) continue;
        const int64_t at = (n * pixels + p0 + j) * channels + int64_t(pack) * W;
        Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(x + at);
#pragma unroll
        for (int i = 0; i < W; ++i) {
          v.element[i] = from_float<T>(to_float(v.element[i]) + weight[pack * W + i] * noise);
        }
        *reinterpret_cast<Pack<T, W>*>(y + at) = v;
      }
    } else {
      for (int j = 0; j < count; ++j) {
        const float noise = __shfl_sync(0xffffffffu, mine, j);
        const int64_t row = (n * pixels + p0 + j) * channels;
        for (int64_t c = lane; c < channels; c += 32) {
          y[row + c] = from_float<T>(to_float(x[row + c]) + weight[c] * noise);
        }
      }
    }
  }
}

// Backward reductions: a block of 32 channels x 8 lanes per (chunk, ...); consecutive threads on consecutive
// channels (coalesced rows), each lane strides over the chunk's rows, the 8 lanes are added by a fixed tree, and
// one thread per output adds the chunks in order. Sums in double; the same result on every run.
constexpr int kTileChannels = 32, kLanes = 8;

// Adds the kLanes values of shared[lane][tx] (a fixed tree); the total is in shared[0][tx].
__device__ inline void add_lanes(double (*shared)[kTileChannels]) {
  __syncthreads();
  for (int width = kLanes / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.y) < width) shared[threadIdx.y][threadIdx.x] += shared[threadIdx.y + width][threadIdx.x];
    __syncthreads();
  }
}

// Block (chunk, channel tile): partial[chunk][c] = sum over its rows r = n·pixels + p of dy[r, c] · noise(n, p).
// Each warp (one lane of the block: blockDim.x is 32) takes runs of 32 rows: its threads draw one row's noise
// each, shared by shuffle, so a row's noise is drawn once per channel tile instead of once per channel.
template <typename T>
__global__ void noise_backward_partial_kernel(const T* dy, const int32_t* sample_ids, double* partial, int64_t batch,
                                              int64_t pixels, int64_t channels, int64_t per_chunk, uint64_t seed,
                                              StepValue step_offset) {
  __shared__ double shared[kLanes][kTileChannels];
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTileChannels + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * per_chunk;
  const int64_t end = begin + per_chunk < batch * pixels ? begin + per_chunk : batch * pixels;
  double sum = 0;
  for (int64_t base = begin + static_cast<int64_t>(threadIdx.y) * 32; base < end; base += kLanes * 32) {
    const int64_t r = base + threadIdx.x;
    const float mine =
        r < end ? cpu::noise_value(seed, offset, static_cast<uint32_t>(sample_ids[r / pixels]), r % pixels) : 0.0f;
    const int count = static_cast<int>(end - base < 32 ? end - base : 32);
    for (int j = 0; j < count; ++j) {
      const float noise = __shfl_sync(0xffffffffu, mine, j);
      if (c < channels) sum += double(to_float(dy[(base + j) * channels + c])) * noise;
    }
  }
  shared[threadIdx.y][threadIdx.x] = sum;
  add_lanes(shared);
  if (threadIdx.y == 0 && c < channels) partial[blockIdx.x * channels + c] = shared[0][threadIdx.x];
}

// Narrow rows, as noise_forward_packed_kernel: block (chunk), 32 x kLanes threads; lane x takes pack x % P of the
// rows x / P of each access (groups = 32 / P rows), warp y every kLanes-th access of the chunk. Lane g < groups
// draws row g's noise, shared by shuffle. Each pack's sums over its groups and warps are added in (y, group)
// order into partial[chunk][c].
template <typename T>
__global__ void noise_backward_packed_partial_kernel(const T* dy, const int32_t* sample_ids, double* partial,
                                                     int64_t batch, int64_t pixels, int64_t channels,
                                                     int64_t per_chunk, uint64_t seed, StepValue step_offset) {
  constexpr int W = kElementsPer16Bytes<T>;
  __shared__ double shared[kLanes][32][W];
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  const int packs = static_cast<int>(channels / W), groups = 32 / packs;
  const int pack = static_cast<int>(threadIdx.x) % packs, group = static_cast<int>(threadIdx.x) / packs;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * per_chunk;
  const int64_t end = begin + per_chunk < batch * pixels ? begin + per_chunk : batch * pixels;
  double sum[W];
#pragma unroll
  for (int i = 0; i < W; ++i) sum[i] = 0.0;
  for (int64_t base = begin + static_cast<int64_t>(threadIdx.y) * groups; base < end; base += kLanes * groups) {
    const int64_t drawn = base + threadIdx.x;
    const float mine = static_cast<int>(threadIdx.x) < groups && drawn < end
                           ? cpu::noise_value(seed, offset, static_cast<uint32_t>(sample_ids[drawn / pixels]),
                                              drawn % pixels)
                           : 0.0f;
    const float noise = __shfl_sync(0xffffffffu, mine, group % 32);
    const int64_t r = base + group;
    if (group >= groups || r >= end) continue;
    const Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(dy + r * channels + int64_t(pack) * W);
#pragma unroll
    for (int i = 0; i < W; ++i) sum[i] += double(to_float(v.element[i])) * noise;
  }
#pragma unroll
  for (int i = 0; i < W; ++i) shared[threadIdx.y][threadIdx.x][i] = sum[i];
  __syncthreads();
  if (threadIdx.y != 0 || group != 0) return;
#pragma unroll
  for (int i = 0; i < W; ++i) {
    double total = 0.0;
    for (int y = 0; y < kLanes; ++y) {
      for (int g = 0; g < groups; ++g) total += shared[y][g * packs + pack][i];
    }
    partial[static_cast<int64_t>(blockIdx.x) * channels + pack * W + i] = total;
  }
}

// One thread per output: out[j] = the sum over chunks of partial[chunk][j], in chunk order.
__global__ void add_chunks_kernel(const double* partial, float* out, int64_t outputs, int64_t chunks) {
  SB_GRID_STRIDE(j, outputs) {
    double sum = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partial[chunk * outputs + j];
    out[j] = static_cast<float>(sum);
  }
}

template <typename T>
__global__ void add_chunks_kernel_typed(const double* partial, T* out, int64_t outputs, int64_t chunks) {
  SB_GRID_STRIDE(j, outputs) {
    double sum = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partial[chunk * outputs + j];
    out[j] = from_float<T>(static_cast<float>(sum));
  }
}

template <typename T>
__global__ void style_forward_kernel(const T* x, const T* style, T* y, int64_t batch, int64_t pixels,
                                     int64_t channels) {
  SB_GRID_STRIDE(i, batch * pixels * channels) {
    const int64_t c = i % channels, n = i / (channels * pixels);
    y[i] = from_float<T>(to_float(x[i]) * (1.0f + to_float(style[n * 2 * channels + c])) +
                         to_float(style[n * 2 * channels + channels + c]));
  }
}

template <typename T>
__global__ void style_backward_data_kernel(const T* style, const T* dy, T* dx, int64_t batch,
                                           int64_t pixels, int64_t channels) {
  SB_GRID_STRIDE(i, batch * pixels * channels) {
    const int64_t c = i % channels, n = i / (channels * pixels);
    dx[i] = from_float<T>(to_float(dy[i]) * (1.0f + to_float(style[n * 2 * channels + c])));
  }
}

// The two elementwise passes above with one 16-byte pack of channels per thread (channels a multiple of a pack,
// pointers aligned): one 64-bit division per pack instead of two per element. Same rounding.
template <typename T>
__global__ void style_forward_packed_kernel(const T* x, const T* style, T* y, int64_t batch, int64_t pixels,
                                            int64_t channels) {
  constexpr int W = kElementsPer16Bytes<T>;
  const int64_t packs = channels / W;
  SB_GRID_STRIDE(v, batch * pixels * packs) {
    const int64_t c0 = (v % packs) * W, n = v / (packs * pixels);
    const T* scale = style + n * 2 * channels + c0;
    Pack<T, W> value = reinterpret_cast<const Pack<T, W>*>(x)[v];
#pragma unroll
    for (int i = 0; i < W; ++i) {
      value.element[i] = from_float<T>(to_float(value.element[i]) * (1.0f + to_float(scale[i])) +
                                       to_float(scale[channels + i]));
    }
    reinterpret_cast<Pack<T, W>*>(y)[v] = value;
  }
}

template <typename T>
__global__ void style_backward_data_packed_kernel(const T* style, const T* dy, T* dx, int64_t batch,
                                                  int64_t pixels, int64_t channels) {
  constexpr int W = kElementsPer16Bytes<T>;
  const int64_t packs = channels / W;
  SB_GRID_STRIDE(v, batch * pixels * packs) {
    const int64_t c0 = (v % packs) * W, n = v / (packs * pixels);
    const T* scale = style + n * 2 * channels + c0;
    Pack<T, W> value = reinterpret_cast<const Pack<T, W>*>(dy)[v];
#pragma unroll
    for (int i = 0; i < W; ++i) {
      value.element[i] = from_float<T>(to_float(value.element[i]) * (1.0f + to_float(scale[i])));
    }
    reinterpret_cast<Pack<T, W>*>(dx)[v] = value;
  }
}

// Block (chunk, sample, channel tile): partial[chunk][n][c] = sum over the chunk's pixels of dy · x, and
// partial[chunk][n][C + c] = sum of dy.
template <typename T>
__global__ void style_backward_partial_kernel(const T* x, const T* dy, double* partial, int64_t batch, int64_t pixels,
                                              int64_t channels, int64_t per_chunk) {
  __shared__ double scale_sums[kLanes][kTileChannels];
  __shared__ double shift_sums[kLanes][kTileChannels];
  const int64_t n = blockIdx.y, c = static_cast<int64_t>(blockIdx.z) * kTileChannels + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * per_chunk;
  const int64_t end = begin + per_chunk < pixels ? begin + per_chunk : pixels;
  double scale = 0, shift = 0;
  if (c < channels) {
    for (int64_t p = begin + threadIdx.y; p < end; p += kLanes) {
      const int64_t at = (n * pixels + p) * channels + c;
      const double g = to_float(dy[at]);
      scale += g * to_float(x[at]);
      shift += g;
    }
  }
  scale_sums[threadIdx.y][threadIdx.x] = scale;
  shift_sums[threadIdx.y][threadIdx.x] = shift;
  add_lanes(scale_sums);
  add_lanes(shift_sums);
  if (threadIdx.y == 0 && c < channels) {
    double* row = partial + (static_cast<int64_t>(blockIdx.x) * batch + n) * 2 * channels;
    row[c] = scale_sums[0][threadIdx.x];
    row[channels + c] = shift_sums[0][threadIdx.x];
  }
}

template <typename T>
__global__ void style_mix_forward_kernel(const T* w, const int32_t* crossover, MutableLayerPointers layers,
                                         int64_t num_layers, int64_t batch, int64_t dim) {
  SB_GRID_STRIDE(i, num_layers * batch * dim) {
    const int64_t d = i % dim, n = (i / dim) % batch, l = i / (dim * batch);
    static_cast<T*>(layers.at[l])[n * dim + d] = w[((crossover[n] > l) ? n : batch + n) * dim + d];
  }
}

// One thread per element of dw: the layers that read that row, in layer order.
template <typename T>
__global__ void style_mix_backward_kernel(LayerPointers dlayers, const int32_t* crossover, T* dw,
                                          int64_t num_layers, int64_t batch, int64_t dim) {
  SB_GRID_STRIDE(i, 2 * batch * dim) {
    const int64_t d = i % dim, row = i / dim, n = row % batch;
    const bool first = row < batch;
    float sum = 0.0f;
    for (int64_t l = 0; l < num_layers; ++l) {
      if ((crossover[n] > l) == first) sum += to_float(static_cast<const T*>(dlayers.at[l])[n * dim + d]);
    }
    dw[i] = from_float<T>(sum);
  }
}

__global__ void ema_kernel(const float* param, float* average, int64_t n, float beta, StepValue step) {
  const bool first_step = step.resolve() == 0;
  SB_GRID_STRIDE(i, n) { average[i] = first_step ? param[i] : param[i] + beta * (average[i] - param[i]); }
}

int blocks(int64_t items) { return detail::grid_stride_blocks(items, kThreads); }

}  // namespace

template <typename T>
void pixel_norm_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows < 1 || cols < 1) throw UsageError("cuda::pixel_norm_forward: empty input");
  pixel_norm_forward_kernel<T><<<blocks(rows), kThreads, 0, stream>>>(x, y, rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void pixel_norm_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows < 1 || cols < 1) throw UsageError("cuda::pixel_norm_backward: empty input");
  pixel_norm_backward_kernel<T><<<blocks(rows), kThreads, 0, stream>>>(x, dy, dx, rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void noise_injection_forward(const T* x, const float* weight, const int32_t* sample_ids, T* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, StepValue offset, cudaStream_t stream) {
  if (batch < 1 || pixels < 1 || channels < 1) throw UsageError("cuda::noise_injection_forward: empty input");
  const int64_t threads = batch * ((pixels + 31) / 32) * 32;  // a warp per run of 32 pixels
  if (narrow_packed_rows<T>(channels, {x, y})) {
    noise_forward_kernel<T, true><<<blocks(threads), kThreads, 0, stream>>>(x, weight, sample_ids, y, batch, pixels,
                                                                            channels, seed, offset);
  } else {
    noise_forward_kernel<T, false><<<blocks(threads), kThreads, 0, stream>>>(x, weight, sample_ids, y, batch, pixels,
                                                                             channels, seed, offset);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void noise_injection_backward(const T* dy, const int32_t* sample_ids, float* dweight, double* workspace, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, StepValue offset, cudaStream_t stream) {
  if (batch < 1 || pixels < 1 || channels < 1) throw UsageError("cuda::noise_injection_backward: empty input");
  const int64_t rows = batch * pixels, chunks = cpu::noise_injection_chunks(rows);
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  if (narrow_packed_rows<T>(channels, {dy})) {
    noise_backward_packed_partial_kernel<T><<<static_cast<unsigned>(chunks), dim3(32, kLanes), 0, stream>>>(
        dy, sample_ids, workspace, batch, pixels, channels, per_chunk, seed, offset);
  } else {
    const dim3 grid(static_cast<unsigned>(chunks),
                    static_cast<unsigned>((channels + kTileChannels - 1) / kTileChannels));
    noise_backward_partial_kernel<T><<<grid, dim3(kTileChannels, kLanes), 0, stream>>>(
        dy, sample_ids, workspace, batch, pixels, channels, per_chunk, seed, offset);
  }
  SB_CUDA_CHECK_LAUNCH();
  add_chunks_kernel<<<blocks(channels), kThreads, 0, stream>>>(workspace, dweight, channels, chunks);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void style_modulation_forward(const T* x, const T* style, T* y, int64_t batch, int64_t pixels,
                              int64_t channels, cudaStream_t stream) {
  if (batch < 1 || pixels < 1 || channels < 1) throw UsageError("cuda::style_modulation_forward: empty input");
  if (rows_fit_16_byte_packs<T>(channels, {x, y})) {
    style_forward_packed_kernel<T><<<blocks(batch * pixels * (channels / kElementsPer16Bytes<T>)), kThreads, 0,
                                     stream>>>(x, style, y, batch, pixels, channels);
  } else {
    style_forward_kernel<T><<<blocks(batch * pixels * channels), kThreads, 0, stream>>>(x, style, y, batch, pixels,
                                                                                     channels);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void style_modulation_backward(const T* x, const T* style, const T* dy, T* dx, T* dstyle, double* workspace,
                               int64_t batch, int64_t pixels, int64_t channels, cudaStream_t stream) {
  if (batch < 1 || pixels < 1 || channels < 1) throw UsageError("cuda::style_modulation_backward: empty input");
  if (rows_fit_16_byte_packs<T>(channels, {dy, dx})) {
    style_backward_data_packed_kernel<T><<<blocks(batch * pixels * (channels / kElementsPer16Bytes<T>)), kThreads, 0,
                                           stream>>>(style, dy, dx, batch, pixels, channels);
  } else {
    style_backward_data_kernel<T><<<blocks(batch * pixels * channels), kThreads, 0, stream>>>(style, dy, dx, batch,
                                                                                              pixels, channels);
  }
  SB_CUDA_CHECK_LAUNCH();
  const int64_t chunks = cpu::style_modulation_chunks(pixels), per_chunk = (pixels + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(batch),
                  static_cast<unsigned>((channels + kTileChannels - 1) / kTileChannels));
  style_backward_partial_kernel<T><<<grid, dim3(kTileChannels, kLanes), 0, stream>>>(x, dy, workspace, batch, pixels,
                                                                                     channels, per_chunk);
  SB_CUDA_CHECK_LAUNCH();
  add_chunks_kernel_typed<T><<<blocks(batch * 2 * channels), kThreads, 0, stream>>>(workspace, dstyle,
                                                                                    batch * 2 * channels, chunks);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void style_mix_forward(const T* w, const int32_t* crossover, const MutableLayerPointers& layers, int64_t num_layers,
                       int64_t batch, int64_t dim, cudaStream_t stream) {
  if (num_layers < 1 || num_layers > 32 || batch < 1 || dim < 1) throw UsageError("cuda::style_mix_forward: bad sizes");
  style_mix_forward_kernel<T><<<blocks(num_layers * batch * dim), kThreads, 0, stream>>>(w, crossover, layers, num_layers,
                                                                                      batch, dim);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void style_mix_backward(const LayerPointers& dlayers, const int32_t* crossover, T* dw, int64_t num_layers,
                        int64_t batch, int64_t dim, cudaStream_t stream) {
  if (num_layers < 1 || num_layers > 32 || batch < 1 || dim < 1) throw UsageError("cuda::style_mix_backward: bad sizes");
  style_mix_backward_kernel<T><<<blocks(2 * batch * dim), kThreads, 0, stream>>>(dlayers, crossover, dw, num_layers, batch,
                                                                               dim);
  SB_CUDA_CHECK_LAUNCH();
}

void ema_update(const float* param, float* average, int64_t n, float beta, StepValue step, cudaStream_t stream) {
  if (n < 1) throw UsageError("cuda::ema_update: empty parameter");
  ema_kernel<<<blocks(n), kThreads, 0, stream>>>(param, average, n, beta, step);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_STYLEGAN_G_OPS(T)                                                                                        \
  template void pixel_norm_forward<T>(const T*, T*, int64_t, int64_t, cudaStream_t);                                \
  template void pixel_norm_backward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);                     \
  template void noise_injection_forward<T>(const T*, const float*, const int32_t*, T*, int64_t, int64_t, int64_t,   \
                                           uint64_t, StepValue, cudaStream_t);                                      \
  template void noise_injection_backward<T>(const T*, const int32_t*, float*, double*, int64_t, int64_t, int64_t,  \
                                            uint64_t, StepValue, cudaStream_t);                                     \
  template void style_modulation_forward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);       \
  template void style_modulation_backward<T>(const T*, const T*, const T*, T*, T*, double*, int64_t, int64_t,      \
                                             int64_t, cudaStream_t);                                                \
  template void style_mix_forward<T>(const T*, const int32_t*, const MutableLayerPointers&, int64_t, int64_t,       \
                                     int64_t, cudaStream_t);                                                        \
  template void style_mix_backward<T>(const LayerPointers&, const int32_t*, T*, int64_t, int64_t, int64_t,          \
                                      cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_STYLEGAN_G_OPS)

}  // namespace sb::cuda

// The node bindings of the StyleGAN families whose kernels live in this file: pixel_norm, noise_injection,
// style_modulation, style_mix and ema (src/cuda/cuda_bindings.h). StyleGAN's ops: activations in the compute
// dtype (SB_TYPED dispatches on the output's, or on the input's for the nodes whose outputs are fp32), the losses'
// scores and the R1 input gradient converted to fp32 by the builder, noise weights and the EMA fp32.
// conv2d_backward_data (src/cuda/conv2d_bindings.cpp) is also the fused up-sampling conv's forward pass and a
// second-order pass of R1.

// The pixel_norm family's node bindings.
namespace sb::cuda_binding {

void bind_pixel_norm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"pixel_norm", SB_TYPED(cuda::pixel_norm_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
      {"pixel_norm_backward",
       SB_TYPED(cuda::pixel_norm_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                          size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
  });
}

// The noise_injection family's node bindings.

void bind_noise_injection_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"noise_injection",
       SB_TYPED(cuda::noise_injection_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                              e.at<T>(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "pixels"),
                                              size_attr(n, "channels"), e.seed(), dropout_offset_value(e, n),
                                              e.stream()))},
      {"noise_injection_backward",  // dy in the compute dtype, the weight's gradient fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::noise_injection_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                          reinterpret_cast<double*>(e.u8(n.outputs[1])), size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                          e.seed(), dropout_offset_value(e, n), e.stream());
         });
       }},
  });
}

// The style_modulation family's node bindings.

void bind_style_modulation_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"style_modulation",
       SB_TYPED(cuda::style_modulation_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                               size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                               e.stream()))},
      {"style_modulation_backward",
       SB_TYPED(cuda::style_modulation_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                                e.at<T>(n.outputs[0]), e.at<T>(n.outputs[1]),
                                                reinterpret_cast<double*>(e.u8(n.outputs[2])), size_attr(n, "batch"),
                                                size_attr(n, "pixels"), size_attr(n, "channels"), e.stream()))},
  });
}

// The style_mix family's node bindings.

void bind_style_mix_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"style_mix", SB_TYPED({
         cuda::MutableLayerPointers layers{};
         for (size_t l = 0; l < n.outputs.size(); ++l) layers.at[l] = e.at<T>(n.outputs[l]);
         cuda::style_mix_forward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), layers, size_attr(n, "layers"),
                                 size_attr(n, "batch"), size_attr(n, "dim"), e.stream());
       })},
      {"style_mix_backward", SB_TYPED({
         cuda::LayerPointers layers{};
         for (size_t l = 0; l + 1 < n.inputs.size(); ++l) layers.at[l] = e.at<T>(n.inputs[l]);
         cuda::style_mix_backward(layers, e.at<int32_t>(n.inputs.back()), e.at<T>(n.outputs[0]),
                                  size_attr(n, "layers"), size_attr(n, "batch"), size_attr(n, "dim"), e.stream());
       })},
  });
}

// The ema family's node bindings.

void bind_ema_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"ema_update",  // the first step of a phase (executor step 0) copies: Gs starts as a clone of G
       [](CudaExecutor& e, const Node& n) {
         cuda::ema_update(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), size_attr(n, "n"), float_attr(n, "beta"),
                          step_count_value(e), e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
