// CUDA weight normalisation (src/cuda/weight_norm.h). One block of 256 threads per row (grid-stride over rows,
// at most one full wave of blocks): each thread sums its strided elements in double, the block combines the
// partial sums by warp shuffles and one shared-memory step (a fixed order), then every thread writes its
// elements. The rows are short (512 to 6,144 columns in ConvS2S) and a row's second pass re-reads it from L1/L2.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/weight_norm.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// The block's sum of `value` (every thread gets it); `shared` holds kWarps doubles. Ends with a barrier, so the
// next call may reuse `shared`.
__device__ double block_sum(double value, double* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kWarps; ++w) total += shared[w];
  __syncthreads();
  return total;
}

__global__ void weight_norm_forward_kernel(const float* __restrict__ v, const float* __restrict__ g,
                                           float* __restrict__ w, float* __restrict__ norms, int64_t rows,
                                           int64_t cols) {
  __shared__ double shared[kWarps];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = v + r * cols;
    double squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) squares += static_cast<double>(row[c]) * row[c];
    const double norm = sqrt(block_sum(squares, shared));
    const double factor = g[r] / norm;
    if (threadIdx.x == 0) norms[r] = static_cast<float>(norm);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) w[r * cols + c] = static_cast<float>(factor * row[c]);
  }
}

__global__ void weight_norm_backward_kernel(const float* __restrict__ dw, const float* __restrict__ v,
                                            const float* __restrict__ g, const float* __restrict__ norms,
                                            float* __restrict__ dv, float* __restrict__ dg, int64_t rows,
                                            int64_t cols) {
  __shared__ double shared[kWarps];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* v_row = v + r * cols;
    const float* dw_row = dw + r * cols;
    double dot = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dot += static_cast<double>(dw_row[c]) * v_row[c];
    dot = block_sum(dot, shared);
    const double norm = norms[r], gradient_g = dot / norm, factor = g[r] / norm;
    if (threadIdx.x == 0) dg[r] = static_cast<float>(gradient_g);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      dv[r * cols + c] = static_cast<float>(factor * (dw_row[c] - v_row[c] * gradient_g / norm));
    }
  }
}

void check_sizes(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 1) {
    throw UsageError(std::string("cuda::") + op + ": invalid size " + std::to_string(rows) + " x " +
                     std::to_string(cols));
  }
}

int row_blocks(int64_t rows) {
  const int64_t wave = int64_t{detail::multiprocessor_count()} * (2048 / kThreads);
  return static_cast<int>(rows < wave ? rows : wave);
}

}  // namespace

void weight_norm_forward(const float* v, const float* g, float* w, float* norms, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  check_sizes("weight_norm_forward", rows, cols);
  if (rows == 0) return;
  weight_norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(v, g, w, norms, rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

void weight_norm_backward(const float* dw, const float* v, const float* g, const float* norms, float* dv, float* dg,
                          int64_t rows, int64_t cols, cudaStream_t stream) {
  check_sizes("weight_norm_backward", rows, cols);
  if (rows == 0) return;
  weight_norm_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(dw, v, g, norms, dv, dg, rows, cols);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda

// The weight_norm family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_weight_norm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"weight_norm",
       [](CudaExecutor& e, const Node& n) {
         cuda::weight_norm_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                   e.at<float>(n.outputs[1]), size_attr(n, "rows"), size_attr(n, "cols"), e.stream());
       }},
      {"weight_norm_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::weight_norm_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                    e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "rows"),
                                    size_attr(n, "cols"), e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
