// CUDA bias ops (src/cuda/bias.h).
// bias_add_forward: grid-stride over x, one 16-byte vector of x (4 floats or 8 bf16) and the matching fp32
//   bias (16 or 32 bytes) per step when cols is a multiple of the vector width and x, bias are 16-byte
//   aligned (each vector then lies inside one row), scalar otherwise; 256 threads per block, one full wave.
// bias_backward: two passes. Pass 1: blocks of 32 x 8 threads sum chunks of rows in double into a
//   stream-ordered scratch of partial sums. A thread owns one column (or one 16-byte vector of columns when
//   the rows allow); when a row has fewer than 32 such slots, the warp's spare lanes take further rows, so
//   StyleGAN's 16-channel 1024^2 layers (two bf16 vectors a row) keep every lane busy. Enough row chunks for
//   ~1024 blocks. Pass 2: blocks of 32 columns x 32 chunk lanes add the chunks, each lane its own in order,
//   then the lanes in a fixed order. Every order depends only on the shapes and the constants below, so the
//   result is the same on every run; double accumulation keeps it within the final fp32 rounding of the CPU's
//   sequential double sum. (History: one block per 32 columns gave 32 blocks for 1024 columns, 6.5 ms of a
//   60 ms transformer_big step; one column slot per lane left 30 of 32 lanes idle on 16 columns, 3.45 ms per
//   16M x 16 bf16 gradient, 29.8 ms of a 226 ms stylegan step.)
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/bias.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/stream_scratch.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;        // bias_add_forward
constexpr int kColumnTile = 32;        // bias_backward: column slots per block at most (one warp wide)
constexpr int kRowLanes = 8;           // bias_backward: block height
constexpr int64_t kMinChunkRows = 64;  // bias_backward: rows per block, at least
constexpr int64_t kTargetBlocks = 1024;  // bias_backward pass 1: (tile, chunk) blocks wanted, ~8 per SM
constexpr int64_t kFewestChunks = 128;   // bias_backward: the chunk cap never falls below this
constexpr int64_t kMostChunks = 1024;    // ... nor rises above this (the scratch bound)
constexpr int kChunkLanes = 32;          // bias_backward pass 2: chunk lanes per column

// Pack (element.h): Pack<T, width> is one 16-byte vector of x, Pack<float, width> the matching bias (one or
// two 16-byte loads).

template <typename T, bool kVector>
__global__ void bias_add_kernel(T* x, const float* bias, int64_t rows, int64_t cols) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kVector) {
    constexpr int kWidth = kElementsPer16Bytes<T>;
    const int64_t row_vectors = cols / kWidth;
    const int64_t vectors = rows * row_vectors;
    Pack<T, kWidth>* xv = reinterpret_cast<Pack<T, kWidth>*>(x);
    const Pack<float, kWidth>* bv = reinterpret_cast<const Pack<float, kWidth>*>(bias);
    for (int64_t v = thread; v < vectors; v += stride) {
      Pack<T, kWidth> value = xv[v];
      const Pack<float, kWidth> b = bv[v % row_vectors];
#pragma unroll
      for (int j = 0; j < kWidth; ++j) value.element[j] = from_float<T>(to_float(value.element[j]) + b.element[j]);
      xv[v] = value;
    }
  } else {
    const int64_t count = rows * cols;
    for (int64_t i = thread; i < count; i += stride) x[i] = from_float<T>(to_float(x[i]) + bias[i % cols]);
  }
}

// Pass 1, grid (column tiles, row chunks), block (32, kRowLanes). A tile is `slots` slots of W columns
// (slots = 32, or all of a narrower row); lane x takes slot x % slots and row group x / slots (the lanes past
// the last whole group idle). Thread (x, y) sums rows lane, lane + lanes, ... of its chunk, lane = group *
// kRowLanes + y, in double (W = 16 bytes of T: one vector load per row); then one thread per slot adds the
// groups' sums in (y, group) order into partial[chunk * cols + column].
template <typename T, int W>
__global__ void bias_partial_kernel(const T* __restrict__ dy, double* __restrict__ partial, int64_t rows,
                                    int64_t cols, int64_t chunk_rows, int slots) {
  __shared__ double sums[kRowLanes][kColumnTile][W];
  const int groups = kColumnTile / slots;
  const int slot = threadIdx.x % slots;
  const int group = threadIdx.x / slots;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * slots + slot) * W;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t last = first + chunk_rows < rows ? first + chunk_rows : rows;
  const int lanes = groups * kRowLanes;
  double sum[W];
#pragma unroll
  for (int j = 0; j < W; ++j) sum[j] = 0.0;
  if (group < groups && col < cols) {
    for (int64_t r = first + group * kRowLanes + threadIdx.y; r < last; r += lanes) {
      if constexpr (W == 1) {
        sum[0] += to_float(dy[r * cols + col]);
      } else {
        const Pack<T, W> v = *reinterpret_cast<const Pack<T, W>*>(dy + r * cols + col);
#pragma unroll
        for (int j = 0; j < W; ++j) sum[j] += to_float(v.element[j]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < W; ++j) sums[threadIdx.y][threadIdx.x][j] = sum[j];
  __syncthreads();
  if (threadIdx.y != 0 || group != 0 || col >= cols) return;
#pragma unroll
  for (int j = 0; j < W; ++j) {
    double total = 0.0;
    for (int y = 0; y < kRowLanes; ++y) {
      for (int g = 0; g < groups; ++g) total += sums[y][g * slots + slot][j];
    }
    partial[static_cast<int64_t>(blockIdx.y) * cols + col + j] = total;
  }
}

// Pass 2, block (32 columns, kChunkLanes): lane y adds chunks y, y + kChunkLanes, ... of its column in order,
// then lane 0 adds the lanes' sums in lane order.
__global__ void bias_final_kernel(const double* __restrict__ partial, float* __restrict__ dbias, int64_t chunks,
                                  int64_t cols) {
  __shared__ double lane_sums[kChunkLanes][kColumnTile];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  double sum = 0.0;
  if (col < cols) {
    for (int64_t k = threadIdx.y; k < chunks; k += kChunkLanes) sum += partial[k * cols + col];
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  double total = 0.0;
  for (int y = 0; y < kChunkLanes; ++y) total += lane_sums[y][threadIdx.x];
  dbias[col] = static_cast<float>(total);
}

// The chunk cap for a given number of column tiles: ~kTargetBlocks blocks in all, within
// [kFewestChunks, kMostChunks]. Fewer tiles (narrower rows) allow more chunks.
int64_t chunk_cap(int64_t tiles) {
  const int64_t wanted = (kTargetBlocks + tiles - 1) / tiles;
  return wanted < kFewestChunks ? kFewestChunks : (wanted > kMostChunks ? kMostChunks : wanted);
}

void check_shape(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError(std::string("cuda::") + op + ": negative size rows=" + std::to_string(rows) +
                     " cols=" + std::to_string(cols));
  }
}

}  // namespace

template <typename T>
void bias_add_forward(T* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_shape("bias_add_forward", rows, cols);
  if (rows == 0 || cols == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (cols % kWidth == 0 && detail::aligned_16(x) && detail::aligned_16(bias)) {
    bias_add_kernel<T, true><<<detail::grid_stride_blocks(rows * (cols / kWidth), kThreads), kThreads, 0, stream>>>(
        x, bias, rows, cols);
  } else {
    bias_add_kernel<T, false><<<detail::grid_stride_blocks(rows * cols, kThreads), kThreads, 0, stream>>>(
        x, bias, rows, cols);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void bias_backward(const T* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_shape("bias_backward", rows, cols);
  if (cols == 0) return;  // rows == 0 still runs: the column sums are 0 and dbias is overwritten
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const bool packed = cols % kWidth == 0 && detail::aligned_16(dy);  // every vector inside one row, aligned
  const int64_t row_slots = packed ? cols / kWidth : cols;
  const int slots = row_slots < kColumnTile ? static_cast<int>(row_slots) : kColumnTile;
  const int64_t tiles = (row_slots + slots - 1) / slots;
  if (tiles > 0x7fffffff) throw UsageError("cuda::bias_backward: " + std::to_string(cols) + " columns");
  int64_t chunk_rows = (rows + chunk_cap(tiles) - 1) / chunk_cap(tiles);
  if (chunk_rows < kMinChunkRows) chunk_rows = kMinChunkRows;
  const int64_t chunks = rows == 0 ? 1 : (rows + chunk_rows - 1) / chunk_rows;
  const ScratchLease scratch(stream, sizeof(double) * chunks * cols);  // chunks x cols partial sums
  auto* partial = static_cast<double*>(scratch.data());
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
  if (packed) {
    bias_partial_kernel<T, kWidth><<<grid, dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, partial, rows, cols,
                                                                                     chunk_rows, slots);
  } else {
    bias_partial_kernel<T, 1><<<grid, dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, partial, rows, cols,
                                                                                chunk_rows, slots);
  }
  SB_CUDA_CHECK_LAUNCH();
  const int64_t final_blocks = (cols + kColumnTile - 1) / kColumnTile;
  bias_final_kernel<<<static_cast<unsigned>(final_blocks), dim3(kColumnTile, kChunkLanes), 0, stream>>>(
      partial, dbias, chunks, cols);
  SB_CUDA_CHECK_LAUNCH();
}

// The most chunks any dtype's launch can use: the widest packs give the fewest tiles, hence the highest cap.
uint64_t bias_backward_scratch_bytes(int64_t cols) {
  constexpr int64_t kWidestPack = 16;  // 16 one-byte elements
  const int64_t fewest_tiles = (cols + kWidestPack * kColumnTile - 1) / (kWidestPack * kColumnTile);
  return static_cast<uint64_t>(chunk_cap(fewest_tiles < 1 ? 1 : fewest_tiles)) * static_cast<uint64_t>(cols) *
         sizeof(double);
}

#define SB_BIAS(T)                                                                     \
  template void bias_add_forward<T>(T*, const float*, int64_t, int64_t, cudaStream_t); \
  template void bias_backward<T>(const T*, float*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BIAS)
#undef SB_BIAS

}  // namespace sb::cuda

// The bias family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_bias_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"bias_backward",  // dy in the compute dtype, the bias gradient fp32: dispatch on the input
       [](CudaExecutor& e, const Node& n) {
         if (dtype_of(e, n.outputs[0]) != DType::kFloat32) throw UsageError("bias_backward writes an fp32 gradient");
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::bias_backward(e.at<T>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "rows"),
                               size_attr(n, "cols"), e.stream());
         });
       },
       [](const Node& n) -> uint64_t { return cuda::bias_backward_scratch_bytes(size_attr(n, "cols")); }},
  });
}

}  // namespace sb::cuda_binding
