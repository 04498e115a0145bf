// CUDA fill (src/cuda/fill.h): grid-stride.
#include <cuda_runtime.h>

#include "scalebench/error.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/fill.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void fill_kernel(T* y, int64_t n, T value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = value;
}

}  // namespace

template <typename T>
void fill(T* y, int64_t n, float value, cudaStream_t stream) {
  if (n < 0) throw UsageError("cuda::fill: negative count");
  if (n == 0) return;
  fill_kernel<T><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(y, n, from_float<T>(value));
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_FILL(T) template void fill<T>(T*, int64_t, float, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_FILL)

}  // namespace sb::cuda
