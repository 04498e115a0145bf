// Philox uniforms on the GPU (src/cuda/random_uniform.h): one thread per Philox block of four values,
// grid-stride, the CPU's mapping (include/scalebench/philox.h does the arithmetic on both devices).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/random_uniform.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void philox_uniform_kernel(float* values, int64_t n, PhiloxKey key, StepValue step_offset) {
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const PhiloxCounter bits = philox4x32(philox_counter(offset + static_cast<uint64_t>(g)), key);
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      if (g * 4 + lane < n) values[g * 4 + lane] = uniform_from_bits(bits.word[lane]);
    }
  }
}

}  // namespace

void philox_uniform(float* values, int64_t n, uint64_t seed, StepValue offset, cudaStream_t stream) {
  SB_CHECK(n >= 0, "cuda::philox_uniform: negative count " + std::to_string(n));
  if (n == 0) return;
  philox_uniform_kernel<<<detail::grid_stride_blocks((n + 3) / 4, kThreads), kThreads, 0, stream>>>(
      values, n, philox_key(seed), offset);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
