// Column select and its gradient (select_column.h): grid-stride loops over the output. The forward reads with
// a stride of cols elements (2 for the SQuAD head, so half of each sector is used); it moves rows elements,
// batch x 384 for SQuAD, which is nothing next to the encoder.
#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/select_column.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void select_column_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols,
                                     int64_t column) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    y[r] = x[r * cols + column];
  }
}

template <typename T>
__global__ void select_column_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, int64_t count,
                                              int64_t cols, int64_t column) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dx[i] = i % cols == column ? dy[i / cols] : from_float<T>(0.0f);
  }
}

void check_sizes(const char* op, int64_t rows, int64_t cols, int64_t column) {
  SB_CHECK(rows >= 0 && cols >= 1, std::string(op) + ": rows must be >= 0 and cols >= 1");
  SB_CHECK(column >= 0 && column < cols, std::string(op) + ": column must be in [0, cols)");
}

}  // namespace

template <typename T>
void select_column_forward(const T* x, T* y, int64_t rows, int64_t cols, int64_t column, cudaStream_t stream) {
  check_sizes("select_column_forward", rows, cols, column);
  if (rows == 0) return;
  SB_CHECK(x && y, "select_column_forward: null pointer");
  select_column_kernel<T><<<detail::grid_stride_blocks(rows, kThreads), kThreads, 0, stream>>>(x, y, rows, cols,
                                                                                                column);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void select_column_backward(const T* dy, T* dx, int64_t rows, int64_t cols, int64_t column, cudaStream_t stream) {
  check_sizes("select_column_backward", rows, cols, column);
  if (rows == 0) return;
  SB_CHECK(dy && dx, "select_column_backward: null pointer");
  const int64_t count = rows * cols;
  select_column_backward_kernel<T><<<detail::grid_stride_blocks(count, kThreads), kThreads, 0, stream>>>(
      dy, dx, count, cols, column);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_SELECT_COLUMN(T)                                                                                  \
  template void select_column_forward<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);             \
  template void select_column_backward<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_SELECT_COLUMN)
#undef SB_SELECT_COLUMN

}  // namespace sb::cuda

// The select_column family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_select_column_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"select_column", SB_TYPED(cuda::select_column_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "rows"), size_attr(n, "cols"),
                                                             size_attr(n, "column"), e.stream()))},
      {"select_column_backward",
       SB_TYPED(cuda::select_column_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                             size_attr(n, "cols"), size_attr(n, "column"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
