// LayerNorm kernels (layernorm.h). Forward and dx: one block per row, fp32 block reductions in a fixed order
// (warp butterfly, then the per-warp totals in warp order), 16-byte accesses of T (4 floats or 8 bf16, with the
// matching fp32 gamma/beta) when cols is a multiple of that width and the pointers are 16-byte aligned. T is
// widened to fp32 on load; y and dx are rounded once to T. dgamma/dbeta: a (32 columns x 8 rows) thread tile
// per (column tile, row chunk) writes fp32 partial sums; a second kernel adds the chunks in order, so results
// are bitwise reproducible.
#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/stream_scratch.h"

namespace sb::cuda {
namespace {

constexpr int kMaxRowThreads = 256;
constexpr int kColumnTile = 32;      // columns per partial-sum block: one warp across a row
constexpr int kRowThreads = 8;       // warps per partial-sum block, striding the chunk's rows
constexpr int64_t kMinChunkRows = 32;
// At most 128 chunks: the final pass adds each column's chunks one after another, so their count is its
// latency (1024 chunks made dgamma/dbeta the larger part of a 16000 x 1024 LayerNorm backward on H200);
// 128 chunks x 32 column tiles is still several waves of partial-sum blocks.
constexpr int64_t kMaxChunks = 128;
constexpr int kFinalThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;  // identical in every lane: fp addition is commutative
}

// Sum over the block (blockDim.x a multiple of 32); every thread gets the same value. `shared` holds 32 floats.
__device__ float block_sum(float v, float* shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // the previous call's reads of `shared` are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x >> 5);
  return warp_sum(lane < warps ? shared[lane] : 0.0f);
}

// Packs (element.h) of W elements: 16 bytes of T (4 floats, 8 bf16) on the vector path, and the matching W
// fp32 parameters (16 or 32 bytes); W = 1 is the scalar path.

// f(First) + ... + f(First + N - 1) as a balanced tree, ((f0 + f1) + (f2 + f3)) for N = 4: a fixed order
// inside each thread's vector, the same one the float4 code used.
template <int N, int First = 0, typename F>
__device__ __forceinline__ float pairwise_sum(F f) {
  if constexpr (N == 1) {
    return f(First);
  } else {
    return pairwise_sum<N / 2, First>(f) + pairwise_sum<N / 2, First + N / 2>(f);
  }
}

// One block per row, W elements per thread step (see Pack): cols % W == 0 and, for W > 1, x, y, gamma and
// beta 16-byte aligned.
template <typename T, int W>
__global__ void layernorm_forward_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, T* __restrict__ y,
                                         float* __restrict__ mean, float* __restrict__ rstd, int64_t cols,
                                         float epsilon) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Pack<T, W>* xr = reinterpret_cast<const Pack<T, W>*>(x + row * cols);
  Pack<T, W>* yr = reinterpret_cast<Pack<T, W>*>(y + row * cols);
  const Pack<float, W>* gv = reinterpret_cast<const Pack<float, W>*>(gamma);
  const Pack<float, W>* bv = reinterpret_cast<const Pack<float, W>*>(beta);
  const int64_t packs = cols / W;

  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    const Pack<T, W> v = xr[i];
    sum += pairwise_sum<W>([&](int j) { return to_float(v.element[j]); });
  }
  const float mu = block_sum(sum, shared) / static_cast<float>(cols);

  float sq = 0.0f;  // second pass: no cancellation for rows with a large mean
  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    const Pack<T, W> v = xr[i];
    sq += pairwise_sum<W>([&](int j) {
      const float d = to_float(v.element[j]) - mu;
      return d * d;
    });
  }
  const float var = block_sum(sq, shared) / static_cast<float>(cols);  // biased
  const float inv_std = 1.0f / sqrtf(var + epsilon);

  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    const Pack<T, W> v = xr[i];
    const Pack<float, W> g = gv[i], b = bv[i];
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      out.element[j] = from_float<T>((to_float(v.element[j]) - mu) * inv_std * g.element[j] + b.element[j]);
    }
    yr[i] = out;
  }
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = inv_std;
  }
}

// dx of one row per block: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. W as above
// (dy, x, dx and gamma 16-byte aligned for W > 1).
template <typename T, int W>
__global__ void layernorm_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                    const float* __restrict__ gamma, const float* __restrict__ mean,
                                    const float* __restrict__ rstd, T* __restrict__ dx, int64_t cols) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Pack<T, W>* xr = reinterpret_cast<const Pack<T, W>*>(x + row * cols);
  const Pack<T, W>* dyr = reinterpret_cast<const Pack<T, W>*>(dy + row * cols);
  Pack<T, W>* dxr = reinterpret_cast<Pack<T, W>*>(dx + row * cols);
  const Pack<float, W>* gv = reinterpret_cast<const Pack<float, W>*>(gamma);
  const float mu = mean[row];
  const float inv_std = rstd[row];
  const int64_t packs = cols / W;

  float g_sum = 0.0f, gx_sum = 0.0f;
  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    const Pack<T, W> v = xr[i], d = dyr[i];
    const Pack<float, W> w = gv[i];
    float g[W];
#pragma unroll
    for (int j = 0; j < W; ++j) g[j] = to_float(d.element[j]) * w.element[j];
    g_sum += pairwise_sum<W>([&](int j) { return g[j]; });
    gx_sum += pairwise_sum<W>([&](int j) { return g[j] * ((to_float(v.element[j]) - mu) * inv_std); });
  }
  const float g_mean = block_sum(g_sum, shared) / static_cast<float>(cols);
  const float gx_mean = block_sum(gx_sum, shared) / static_cast<float>(cols);

  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
    const Pack<T, W> v = xr[i], d = dyr[i];
    const Pack<float, W> w = gv[i];
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float xhat = (to_float(v.element[j]) - mu) * inv_std;
      out.element[j] = from_float<T>(inv_std * (to_float(d.element[j]) * w.element[j] - g_mean - xhat * gx_mean));
    }
    dxr[i] = out;
  }
}

// Block (kColumnTile, kRowThreads) at (column tile blockIdx.x, row chunk blockIdx.y): partial sums of
// dy * xhat and dy over the chunk's rows, written to partial_*[chunk * cols + c]. A warp reads 32
// consecutive columns of one row (coalesced).
template <typename T>
__global__ void layernorm_param_partial_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                               const float* __restrict__ mean, const float* __restrict__ rstd,
                                               float* __restrict__ partial_gamma, float* __restrict__ partial_beta,
                                               int64_t rows, int64_t cols, int64_t chunk_rows) {
  __shared__ float tile_gamma[kRowThreads][kColumnTile + 1];
  __shared__ float tile_beta[kRowThreads][kColumnTile + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t last = first + chunk_rows < rows ? first + chunk_rows : rows;
  float g = 0.0f, b = 0.0f;
  if (c < cols) {
    for (int64_t r = first + threadIdx.y; r < last; r += kRowThreads) {
      const float d = to_float(dy[r * cols + c]);
      g += d * ((to_float(x[r * cols + c]) - mean[r]) * rstd[r]);
      b += d;
    }
  }
  tile_gamma[threadIdx.y][threadIdx.x] = g;
  tile_beta[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float gs = 0.0f, bs = 0.0f;
    for (int i = 0; i < kRowThreads; ++i) {
      gs += tile_gamma[i][threadIdx.x];
      bs += tile_beta[i][threadIdx.x];
    }
    partial_gamma[static_cast<int64_t>(blockIdx.y) * cols + c] = gs;
    partial_beta[static_cast<int64_t>(blockIdx.y) * cols + c] = bs;
  }
}

// One thread per column: the chunks' partial sums added in chunk order.
__global__ void layernorm_param_final_kernel(const float* __restrict__ partial_gamma,
                                             const float* __restrict__ partial_beta, float* __restrict__ dgamma,
                                             float* __restrict__ dbeta, int64_t chunks, int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float g = 0.0f, b = 0.0f;
#pragma unroll 8
  for (int64_t k = 0; k < chunks; ++k) {
    g += partial_gamma[k * cols + c];
    b += partial_beta[k * cols + c];
  }
  dgamma[c] = g;
  dbeta[c] = b;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Threads per row block: enough warps to cover the row once (in vectors when vectorised), at most 256.
int row_threads(int64_t work) {
  const int64_t warps = (work + 31) / 32;
  const int64_t threads = warps * 32;
  return static_cast<int>(threads < kMaxRowThreads ? (threads < 32 ? 32 : threads) : kMaxRowThreads);
}

void check_shape(const char* op, int64_t rows, int64_t cols) {
  SB_CHECK(rows >= 0 && cols > 0, std::string(op) + ": rows must be >= 0 and cols > 0");
  SB_CHECK(rows <= INT32_MAX, std::string(op) + ": rows must fit a 1-D grid (<= 2^31 - 1)");
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const float* gamma, const float* beta, T* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float epsilon, cudaStream_t stream) {
  check_shape("layernorm_forward", rows, cols);
  SB_CHECK(epsilon >= 0.0f, "layernorm_forward: epsilon must be >= 0");
  if (rows == 0) return;
  SB_CHECK(x && gamma && beta && y && mean && rstd, "layernorm_forward: null pointer");
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const bool vector = cols % kWidth == 0 && aligned16(x) && aligned16(y) && aligned16(gamma) && aligned16(beta);
  const int threads = row_threads(vector ? cols / kWidth : cols);
  const dim3 grid(static_cast<unsigned>(rows));
  if (vector) {
    layernorm_forward_kernel<T, kWidth><<<grid, threads, 0, stream>>>(x, gamma, beta, y, mean, rstd, cols, epsilon);
  } else {
    layernorm_forward_kernel<T, 1><<<grid, threads, 0, stream>>>(x, gamma, beta, y, mean, rstd, cols, epsilon);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const float* gamma, const float* mean, const float* rstd, T* dx,
                        float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_shape("layernorm_backward", rows, cols);
  SB_CHECK(gamma && dgamma && dbeta, "layernorm_backward: null pointer");
  if (rows == 0) {  // empty column sums, as the CPU reference writes
    SB_CUDA_CHECK(cudaMemsetAsync(dgamma, 0, sizeof(float) * cols, stream));
    SB_CUDA_CHECK(cudaMemsetAsync(dbeta, 0, sizeof(float) * cols, stream));
    return;
  }
  SB_CHECK(dy && x && mean && rstd && dx, "layernorm_backward: null pointer");

  constexpr int kWidth = kElementsPer16Bytes<T>;
  const bool vector = cols % kWidth == 0 && aligned16(dy) && aligned16(x) && aligned16(gamma) && aligned16(dx);
  const int threads = row_threads(vector ? cols / kWidth : cols);
  const dim3 grid(static_cast<unsigned>(rows));
  if (vector) {
    layernorm_dx_kernel<T, kWidth><<<grid, threads, 0, stream>>>(dy, x, gamma, mean, rstd, dx, cols);
  } else {
    layernorm_dx_kernel<T, 1><<<grid, threads, 0, stream>>>(dy, x, gamma, mean, rstd, dx, cols);
  }
  SB_CUDA_CHECK_LAUNCH();

  // Chunks of >= 32 rows, at most kMaxChunks of them: 4096 rows -> 128 chunks of 32, 16000 -> 128 of 125.
  int64_t chunk_rows = (rows + kMaxChunks - 1) / kMaxChunks;
  if (chunk_rows < kMinChunkRows) chunk_rows = kMinChunkRows;
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const int64_t column_tiles = (cols + kColumnTile - 1) / kColumnTile;
  SB_CHECK(column_tiles <= INT32_MAX, "layernorm_backward: cols too large for the grid");

  const ScratchLease scratch(stream, sizeof(float) * 2 * chunks * cols);
  auto* workspace = static_cast<float*>(scratch.data());
  float* partial_gamma = workspace;
  float* partial_beta = workspace + chunks * cols;
  layernorm_param_partial_kernel<T><<<dim3(static_cast<unsigned>(column_tiles), static_cast<unsigned>(chunks)),
                                   dim3(kColumnTile, kRowThreads), 0, stream>>>(
      dy, x, mean, rstd, partial_gamma, partial_beta, rows, cols, chunk_rows);
  SB_CUDA_CHECK_LAUNCH();
  const int64_t final_blocks = (cols + kFinalThreads - 1) / kFinalThreads;
  layernorm_param_final_kernel<<<static_cast<unsigned>(final_blocks), kFinalThreads, 0, stream>>>(
      partial_gamma, partial_beta, dgamma, dbeta, chunks, cols);
  SB_CUDA_CHECK_LAUNCH();
}

uint64_t layernorm_backward_scratch_bytes(int64_t cols) {
  return 2 * static_cast<uint64_t>(kMaxChunks) * static_cast<uint64_t>(cols) * sizeof(float);
}

#define SB_LAYERNORM(T)                                                                                          \
  template void layernorm_forward<T>(const T*, const float*, const float*, T*, float*, float*, int64_t, int64_t, \
                                     float, cudaStream_t);                                                       \
  template void layernorm_backward<T>(const T*, const T*, const float*, const float*, const float*, T*, float*,  \
                                      float*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_LAYERNORM)
#undef SB_LAYERNORM

}  // namespace sb::cuda

// The layernorm family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_layernorm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"layernorm", SB_TYPED(cuda::layernorm_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                     e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                     e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]),
                                                     size_attr(n, "rows"), size_attr(n, "cols"),
                                                     float_attr(n, "epsilon"), e.stream()))},
      {"layernorm_backward",
       SB_TYPED(cuda::layernorm_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                         e.at<float>(n.inputs[3]), e.at<float>(n.inputs[4]), e.at<T>(n.outputs[0]),
                                         e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]), size_attr(n, "rows"),
                                         size_attr(n, "cols"), e.stream())),
       [](const Node& n) -> uint64_t { return cuda::layernorm_backward_scratch_bytes(size_attr(n, "cols")); }},
  });
}

}  // namespace sb::cuda_binding
