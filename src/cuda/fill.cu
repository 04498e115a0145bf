// CUDA fill (src/cuda/fill.h): grid-stride.
#include <cuda_runtime.h>

#include "scalebench/error.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/fill.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void fill_kernel(float* y, int64_t n, float value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = value;
}

}  // namespace

void fill(float* y, int64_t n, float value, cudaStream_t stream) {
  if (n < 0) throw UsageError("cuda::fill: negative count");
  if (n == 0) return;
  fill_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(y, n, value);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
