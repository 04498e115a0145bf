// CUDA bias ops (src/cuda/bias.h).
// bias_add_forward: grid-stride over x, one 16-byte vector of x (4 floats or 8 bf16) and the matching fp32
//   bias (16 or 32 bytes) per step when cols is a multiple of the vector width and x, bias are 16-byte
//   aligned (each vector then lies inside one row), scalar otherwise; 256 threads per block, one full wave.
// bias_backward: one block of 32 x 32 threads per tile of 32 columns. Thread (c, r) sums rows r, r + 32,
//   r + 64, ... of column c in double (a warp reads 32 contiguous elements of one row per step), then the 32
//   row lanes are combined by a fixed shared-memory tree. The order depends only on the constants below, so
//   the result is the same on every run; double accumulation keeps it within the final fp32 rounding of the
//   CPU's sequential double sum. 768 columns give 24 blocks: the op reads rows*cols elements once, small
//   beside the GEMM it follows, so it is not split further (that would need a second pass or atomics).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/bias.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;        // bias_add_forward
constexpr int kColumnTile = 32;      // bias_backward: columns per block (one warp wide)
constexpr int kRowLanes = 32;        // bias_backward: row partial sums per column (block height)
constexpr int kRowsInFlight = 4;     // loads issued before their adds, per thread

// N elements of T in 16-byte-aligned accesses: Pack<T, width> is one vector of x, Pack<float, width> the
// matching bias (one or two 16-byte loads).
template <typename T, int N>
struct alignas(16) Pack {
  T element[N];
};

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

// grid (ceil(cols / 32)), block (32, 32).
template <typename T>
__global__ void bias_backward_kernel(const T* __restrict__ dy, float* __restrict__ dbias, int64_t rows,
                                     int64_t cols) {
  __shared__ double partial[kRowLanes][kColumnTile];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  double sum = 0.0;
  if (col < cols) {
    const T* column = dy + col;
    int64_t r = threadIdx.y;
    for (; r + (kRowsInFlight - 1) * kRowLanes < rows; r += kRowsInFlight * kRowLanes) {
      float v[kRowsInFlight];
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) v[j] = to_float(column[(r + j * kRowLanes) * cols]);
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) sum += v[j];
    }
    for (; r < rows; r += kRowLanes) sum += to_float(column[r * cols]);
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
  bias_backward_kernel<T><<<static_cast<unsigned>(tiles), dim3(kColumnTile, kRowLanes), 0, stream>>>(dy, dbias,
                                                                                                       rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_BIAS(T)                                                                     \
  template void bias_add_forward<T>(T*, const float*, int64_t, int64_t, cudaStream_t); \
  template void bias_backward<T>(const T*, float*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BIAS)
#undef SB_BIAS

}  // namespace sb::cuda
