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

namespace {

__global__ void zero_byte_ranges_kernel(unsigned char* base, const uint64_t* offsets, const uint32_t* bytes) {
  uint32_t* words = reinterpret_cast<uint32_t*>(base + offsets[blockIdx.x]);
  const uint32_t count = bytes[blockIdx.x] / 4;
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) words[i] = 0;
}

}  // namespace

void zero_byte_ranges(void* base, const uint64_t* offsets, const uint32_t* bytes, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  if (count > 0x7fffffffu) throw UsageError("cuda::zero_byte_ranges: too many ranges for one grid");
  zero_byte_ranges_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(static_cast<unsigned char*>(base),
                                                                                  offsets, bytes);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_FILL(T) template void fill<T>(T*, int64_t, float, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_FILL)

}  // namespace sb::cuda
