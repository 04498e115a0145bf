// Broadcast add and middle-dimension swap (layout.h): grid-stride loops over the output, one float4 per thread
// step when the innermost run (block, or d) is a multiple of 4 floats and the pointers are 16-byte aligned.
// The swap's writes are consecutive across a warp; its reads are consecutive within each run of d floats.
#include <cstdint>
#include <string>

#include "src/cuda/cuda_check.h"
#include "src/cuda/layout.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 16;  // fills an H200 (132 SMs); the loops stride the rest

// T is float or float4; count and block are in units of T.
template <typename T>
__device__ __forceinline__ T add(T a, T b);
template <>
__device__ __forceinline__ float add(float a, float b) { return a + b; }
template <>
__device__ __forceinline__ float4 add(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

template <typename T>
__global__ void add_broadcast_kernel(const T* x, const T* __restrict__ table, T* y, int64_t count, int64_t block) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    y[i] = add(x[i], table[i % block]);
  }
}

// Output index o of y (a, c, b, d) -> (i, k, j, e); read x (a, b, c, d) at (i, j, k, e). d in units of T.
template <typename T>
__global__ void swap_middle_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t count, int64_t b,
                                   int64_t c, int64_t d) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < count; o += stride) {
    const int64_t e = o % d;
    int64_t rest = o / d;
    const int64_t j = rest % b;
    rest /= b;
    const int64_t k = rest % c;
    const int64_t i = rest / c;
    y[o] = x[((i * b + j) * c + k) * d + e];
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

unsigned blocks_for(int64_t count) {
  const int64_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(needed < kMaxBlocks ? needed : kMaxBlocks);
}

}  // namespace

void add_broadcast_forward(const float* x, const float* table, float* y, int64_t repeats, int64_t block,
                           cudaStream_t stream) {
  SB_CHECK(repeats >= 0 && block >= 0, "add_broadcast_forward: repeats and block must be >= 0");
  const int64_t count = repeats * block;
  if (count == 0) return;
  SB_CHECK(x && table && y, "add_broadcast_forward: null pointer");
  if (block % 4 == 0 && aligned16(x) && aligned16(table) && aligned16(y)) {
    add_broadcast_kernel<float4><<<blocks_for(count / 4), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(table), reinterpret_cast<float4*>(y),
        count / 4, block / 4);
  } else {
    add_broadcast_kernel<float><<<blocks_for(count), kThreads, 0, stream>>>(x, table, y, count, block);
  }
  SB_CUDA_CHECK_LAUNCH();
}

void swap_middle(const float* x, float* y, int64_t a, int64_t b, int64_t c, int64_t d, cudaStream_t stream) {
  SB_CHECK(a >= 0 && b >= 0 && c >= 0 && d >= 0, "swap_middle: a, b, c and d must be >= 0");
  const int64_t count = a * b * c * d;
  if (count == 0) return;
  SB_CHECK(x && y, "swap_middle: null pointer");
  SB_CHECK(x != y, "swap_middle: y may not alias x");
  if (d % 4 == 0 && aligned16(x) && aligned16(y)) {
    swap_middle_kernel<float4><<<blocks_for(count / 4), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), count / 4, b, c, d / 4);
  } else {
    swap_middle_kernel<float><<<blocks_for(count), kThreads, 0, stream>>>(x, y, count, b, c, d);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
