// CUDA GLU (src/cuda/glu.h). Grid-stride over packs of W consecutive output columns of one row: W = one 16-byte
// vector of T (4 floats, 8 bf16/fp16) when cols is a multiple of it and every pointer is 16-byte aligned (then
// the a and b halves of a row, cols apart, are aligned too), W = 1 otherwise. Each pack reads its a and b
// halves (and dy) and writes y (or both halves of dx). 256 threads per block, at most one full wave.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/glu.h"
#include "src/cuda/grid.h"
#include "src/cuda/packs.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

// s = sigmoid(b) and 1 - s, both from t = exp(-|b|) in (0, 1]: no overflow, and no cancellation in 1 - s where
// s is near 1 (the CPU's formula, in fp32).
struct Gate {
  float s, one_minus_s;
};
__device__ inline Gate gate(float b) {
  const float t = expf(-fabsf(b));
  const float r = 1.0f / (1.0f + t);
  return b >= 0.0f ? Gate{r, t * r} : Gate{t * r, r};
}

template <typename T, int W>
__global__ void glu_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  const int64_t row_packs = cols / W, packs = rows * row_packs;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    const int64_t r = p / row_packs, c = (p - r * row_packs) * W;
    const Pack<T, W> a = *reinterpret_cast<const Pack<T, W>*>(x + r * 2 * cols + c);
    const Pack<T, W> b = *reinterpret_cast<const Pack<T, W>*>(x + r * 2 * cols + cols + c);
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) out.element[j] = from_float<T>(to_float(a.element[j]) * gate(to_float(b.element[j])).s);
    *reinterpret_cast<Pack<T, W>*>(y + r * cols + c) = out;
  }
}

// da = dy · s, db = dy · a · s (1 − s).
template <typename T, int W>
__global__ void glu_backward_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx,
                                    int64_t rows, int64_t cols) {
  const int64_t row_packs = cols / W, packs = rows * row_packs;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    const int64_t r = p / row_packs, c = (p - r * row_packs) * W;
    const Pack<T, W> a = *reinterpret_cast<const Pack<T, W>*>(x + r * 2 * cols + c);
    const Pack<T, W> b = *reinterpret_cast<const Pack<T, W>*>(x + r * 2 * cols + cols + c);
    const Pack<T, W> g = *reinterpret_cast<const Pack<T, W>*>(dy + r * cols + c);
    Pack<T, W> da, db;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const Gate s = gate(to_float(b.element[j]));
      const float gj = to_float(g.element[j]);
      da.element[j] = from_float<T>(gj * s.s);
      db.element[j] = from_float<T>(gj * to_float(a.element[j]) * (s.s * s.one_minus_s));
    }
    *reinterpret_cast<Pack<T, W>*>(dx + r * 2 * cols + c) = da;
    *reinterpret_cast<Pack<T, W>*>(dx + r * 2 * cols + cols + c) = db;
  }
}

void check_sizes(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError(std::string("cuda::") + op + ": negative size " + std::to_string(rows) + " x " +
                     std::to_string(cols));
  }
}

}  // namespace

template <typename T>
void glu_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_sizes("glu_forward", rows, cols);
  if (rows == 0 || cols == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(cols, {x, y})) {
    glu_forward_kernel<T, kWidth><<<detail::grid_stride_blocks(rows * cols / kWidth, kThreads), kThreads, 0,
                                    stream>>>(x, y, rows, cols);
  } else {
    glu_forward_kernel<T, 1><<<detail::grid_stride_blocks(rows * cols, kThreads), kThreads, 0, stream>>>(x, y, rows,
                                                                                                       cols);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void glu_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_sizes("glu_backward", rows, cols);
  if (rows == 0 || cols == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (rows_fit_16_byte_packs<T>(cols, {x, dy, dx})) {
    glu_backward_kernel<T, kWidth><<<detail::grid_stride_blocks(rows * cols / kWidth, kThreads), kThreads, 0,
                                     stream>>>(x, dy, dx, rows, cols);
  } else {
    glu_backward_kernel<T, 1><<<detail::grid_stride_blocks(rows * cols, kThreads), kThreads, 0, stream>>>(
        x, dy, dx, rows, cols);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_GLU(T)                                                              \
  template void glu_forward<T>(const T*, T*, int64_t, int64_t, cudaStream_t); \
  template void glu_backward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_GLU)
#undef SB_GLU

}  // namespace sb::cuda

// The glu family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_glu_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // ConvS2S's ops: GLU and the row scaling in the compute dtype (the factors fp32), weight normalisation on
      // the fp32 parameters and gradients; grad_multiply's forward is a view (its backward is a `scale` node).
      {"glu", SB_TYPED(cuda::glu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                         size_attr(n, "cols"), e.stream()))},
      {"glu_backward", SB_TYPED(cuda::glu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                                   size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
