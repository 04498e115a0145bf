// CUDA bias ops (src/cuda/bias.h).
// bias_add_forward: grid-stride over x, float4 when cols % 4 == 0 and x, bias are 16-byte aligned (each
//   vector then lies inside one row), scalar otherwise; 256 threads per block, at most one full wave.
// bias_backward: one block of 32 x 32 threads per tile of 32 columns. Thread (c, r) sums rows r, r + 32,
//   r + 64, ... of column c in double (a warp reads 128 contiguous bytes of one row per step), then the 32
//   row lanes are combined by a fixed shared-memory tree. The order depends only on the constants below, so
//   the result is the same on every run; double accumulation keeps it within the final fp32 rounding of the
//   CPU's sequential double sum. 768 columns give 24 blocks: the op reads rows*cols*4 bytes once, small
//   beside the GEMM it follows, so it is not split further (that would need a second pass or atomics).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/bias.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;        // bias_add_forward
constexpr int kColumnTile = 32;      // bias_backward: columns per block (one warp wide)
constexpr int kRowLanes = 32;        // bias_backward: row partial sums per column (block height)
constexpr int kRowsInFlight = 4;     // loads issued before their adds, per thread

template <bool kVector>
__global__ void bias_add_kernel(float* x, const float* bias, int64_t rows, int64_t cols) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kVector) {
    const int64_t row_vectors = cols / 4;
    const int64_t vectors = rows * row_vectors;
    float4* x4 = reinterpret_cast<float4*>(x);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    for (int64_t v = thread; v < vectors; v += stride) {
      float4 value = x4[v];
      const float4 b = b4[v % row_vectors];
      value.x += b.x;
      value.y += b.y;
      value.z += b.z;
      value.w += b.w;
      x4[v] = value;
    }
  } else {
    const int64_t count = rows * cols;
    for (int64_t i = thread; i < count; i += stride) x[i] += bias[i % cols];
  }
}

// grid (ceil(cols / 32)), block (32, 32).
__global__ void bias_backward_kernel(const float* __restrict__ dy, float* __restrict__ dbias, int64_t rows,
                                     int64_t cols) {
  __shared__ double partial[kRowLanes][kColumnTile];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  double sum = 0.0;
  if (col < cols) {
    const float* column = dy + col;
    int64_t r = threadIdx.y;
    for (; r + (kRowsInFlight - 1) * kRowLanes < rows; r += kRowsInFlight * kRowLanes) {
      float v[kRowsInFlight];
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) v[j] = column[(r + j * kRowLanes) * cols];
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) sum += v[j];
    }
    for (; r < rows; r += kRowLanes) sum += column[r * cols];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  for (int half = kRowLanes / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) partial[threadIdx.y][threadIdx.x] += partial[threadIdx.y + half][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && col < cols) dbias[col] = static_cast<float>(partial[0][threadIdx.x]);
}

void check_shape(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError(std::string("cuda::") + op + ": negative size rows=" + std::to_string(rows) +
                     " cols=" + std::to_string(cols));
  }
}

}  // namespace

void bias_add_forward(float* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_shape("bias_add_forward", rows, cols);
  if (rows == 0 || cols == 0) return;
  if (cols % 4 == 0 && detail::aligned_16(x) && detail::aligned_16(bias)) {
    bias_add_kernel<true><<<detail::grid_stride_blocks(rows * (cols / 4), kThreads), kThreads, 0, stream>>>(
        x, bias, rows, cols);
  } else {
    bias_add_kernel<false><<<detail::grid_stride_blocks(rows * cols, kThreads), kThreads, 0, stream>>>(
        x, bias, rows, cols);
  }
  SB_CUDA_CHECK_LAUNCH();
}

void bias_backward(const float* dy, float* dbias, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_shape("bias_backward", rows, cols);
  if (cols == 0) return;  // rows == 0 still runs: the column sums are 0 and dbias is overwritten
  const int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
  if (tiles > 0x7fffffff) throw UsageError("cuda::bias_backward: " + std::to_string(cols) + " columns");
  bias_backward_kernel<<<static_cast<unsigned>(tiles), dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, dbias,
                                                                                                    rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
