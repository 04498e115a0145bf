// CUDA per-row scaling (src/cuda/scale_rows.h): grid-stride over packs of one row, a 16-byte vector of T when
// cols is a multiple of its width and x, y are 16-byte aligned, single elements otherwise; 256 threads per
// block, at most one full wave. No __restrict__: y may be x (each pack is read before it is written).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/scale_rows.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, int W>
__global__ void scale_rows_kernel(const T* x, const float* factors, T* y, int64_t rows, int64_t cols) {
  const int64_t row_packs = cols / W, packs = rows * row_packs;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    const float factor = factors[p / row_packs];
    Pack<T, W> value = reinterpret_cast<const Pack<T, W>*>(x)[p];
#pragma unroll
    for (int j = 0; j < W; ++j) value.element[j] = from_float<T>(factor * to_float(value.element[j]));
    reinterpret_cast<Pack<T, W>*>(y)[p] = value;
  }
}

}  // namespace

template <typename T>
void scale_rows_forward(const T* x, const float* factors, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows < 0 || cols < 0) {
    throw UsageError("cuda::scale_rows_forward: negative size " + std::to_string(rows) + " x " +
                     std::to_string(cols));
  }
  if (rows == 0 || cols == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (cols % kWidth == 0 && detail::aligned_16(x) && detail::aligned_16(y)) {
    scale_rows_kernel<T, kWidth><<<detail::grid_stride_blocks(rows * cols / kWidth, kThreads), kThreads, 0,
                                   stream>>>(x, factors, y, rows, cols);
  } else {
    scale_rows_kernel<T, 1><<<detail::grid_stride_blocks(rows * cols, kThreads), kThreads, 0, stream>>>(
        x, factors, y, rows, cols);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_SCALE_ROWS(T) \
  template void scale_rows_forward<T>(const T*, const float*, T*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_SCALE_ROWS)
#undef SB_SCALE_ROWS

}  // namespace sb::cuda

// The scale_rows family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_scale_rows_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"scale_rows", SB_TYPED(cuda::scale_rows_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                       e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                                       size_attr(n, "cols"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
