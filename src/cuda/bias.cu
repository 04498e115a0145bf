// CUDA bias ops (src/cuda/bias.h).
// bias_add_forward: grid-stride over x, one 16-byte vector of x (4 floats or 8 bf16) and the matching fp32
//   bias (16 or 32 bytes) per step when cols is a multiple of the vector width and x, bias are 16-byte
//   aligned (each vector then lies inside one row), scalar otherwise; 256 threads per block, one full wave.
// bias_backward: two passes. Blocks of 32 threads (one column each, or one 16-byte vector of columns when the
//   rows allow) x 8 row lanes each sum one chunk of rows (>= 64) in double
//   into a stream-ordered scratch of partial sums; then one thread per column adds the chunks in order. The
//   order depends only on the shapes and the constants below, so the result is the same on every run; double
//   accumulation keeps it within the final fp32 rounding of the CPU's sequential double sum. (One block per
//   32 columns, the first version, gave 32 blocks for 1024 columns: 6.5 ms of a 60 ms transformer_big step.)
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/bias.h"
#include "src/cuda/stream_scratch.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;        // bias_add_forward
constexpr int kColumnTile = 32;      // bias_backward: columns per block (one warp wide)
constexpr int kRowLanes = 8;         // bias_backward: row partial sums per column (block height)
constexpr int64_t kMinChunkRows = 64;  // bias_backward: rows per block, at least
constexpr int64_t kMaxChunks = 128;    // bias_backward: row chunks, at most (the final pass adds them in turn)

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

// Pass 1, grid (column tiles, row chunks), block (32, kRowLanes): thread (c, r) sums rows r, r + kRowLanes,
// ... of its chunk for its W columns c * W ... c * W + W - 1 in double (W = 1: a warp reads 32 contiguous
// elements of a row; W = 16 bytes of T: 512 contiguous bytes, one vector load per thread and row); the row
// lanes are combined by a fixed shared-memory tree into partial[chunk * cols + column].
template <typename T, int W>
__global__ void bias_partial_kernel(const T* __restrict__ dy, double* __restrict__ partial, int64_t rows,
                                    int64_t cols, int64_t chunk_rows) {
  __shared__ double lanes[kRowLanes][kColumnTile * W];
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x) * W;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t last = first + chunk_rows < rows ? first + chunk_rows : rows;
  double sum[W];
#pragma unroll
  for (int j = 0; j < W; ++j) sum[j] = 0.0;
  if (col < cols) {
    for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
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
  for (int j = 0; j < W; ++j) lanes[threadIdx.y][threadIdx.x * W + j] = sum[j];
  __syncthreads();
  for (int half = kRowLanes / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) {
#pragma unroll
      for (int j = 0; j < W; ++j) lanes[threadIdx.y][threadIdx.x * W + j] += lanes[threadIdx.y + half][threadIdx.x * W + j];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && col < cols) {
#pragma unroll
    for (int j = 0; j < W; ++j) partial[static_cast<int64_t>(blockIdx.y) * cols + col + j] = lanes[0][threadIdx.x * W + j];
  }
}

// Pass 2, one thread per column: the chunks' partial sums added in chunk order.
__global__ void bias_final_kernel(const double* __restrict__ partial, float* __restrict__ dbias, int64_t chunks,
                                  int64_t cols) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  double sum = 0.0;
#pragma unroll 8
  for (int64_t k = 0; k < chunks; ++k) sum += partial[k * cols + col];
  dbias[col] = static_cast<float>(sum);
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
  const int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
  if (tiles > 0x7fffffff) throw UsageError("cuda::bias_backward: " + std::to_string(cols) + " columns");
  // Enough (tile, chunk) blocks to fill the GPU several times over, and few enough chunks for a short final
  // pass: 16000 rows x 1024 columns gives 32 tiles x 128 chunks of 125 rows.
  int64_t chunk_rows = (rows + kMaxChunks - 1) / kMaxChunks;
  if (chunk_rows < kMinChunkRows) chunk_rows = kMinChunkRows;
  const int64_t chunks = rows == 0 ? 1 : (rows + chunk_rows - 1) / chunk_rows;
  const ScratchLease scratch(stream, sizeof(double) * chunks * cols);  // chunks x cols partial sums
  auto* partial = static_cast<double*>(scratch.data());
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (cols % kWidth == 0 && detail::aligned_16(dy)) {  // every vector inside one row, 16-byte aligned
    const int64_t wide_tiles = (cols / kWidth + kColumnTile - 1) / kColumnTile;
    bias_partial_kernel<T, kWidth><<<dim3(static_cast<unsigned>(wide_tiles), static_cast<unsigned>(chunks)),
                                     dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, partial, rows, cols, chunk_rows);
  } else {
    bias_partial_kernel<T, 1><<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)),
                                dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, partial, rows, cols, chunk_rows);
  }
  SB_CUDA_CHECK_LAUNCH();
  const int64_t final_blocks = (cols + kThreads - 1) / kThreads;
  bias_final_kernel<<<static_cast<unsigned>(final_blocks), kThreads, 0, stream>>>(partial, dbias, chunks, cols);
  SB_CUDA_CHECK_LAUNCH();
}

uint64_t bias_backward_scratch_bytes(int64_t cols) {
  return static_cast<uint64_t>(kMaxChunks) * static_cast<uint64_t>(cols) * sizeof(double);
}

#define SB_BIAS(T)                                                                     \
  template void bias_add_forward<T>(T*, const float*, int64_t, int64_t, cudaStream_t); \
  template void bias_backward<T>(const T*, float*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BIAS)
#undef SB_BIAS

}  // namespace sb::cuda
