// Verification kernels: write the exact small-integer pattern of include/scalebench/pattern.h, and count
// the elements of a collective's output that differ from it. Grid-stride loops; the pattern is computed,
// not read, so checking a 2 GiB buffer moves 2 GiB once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "src/cuda/cuda_check.h"
#include "src/cuda/pattern_kernels.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 132 * 16;  // enough to fill an H200 (132 SMs); the loops stride the rest

template <typename T>
struct Element;
template <>
struct Element<float> {
  __device__ static float from_double(double v) { return static_cast<float>(v); }
  __device__ static double to_double(float v) { return v; }
};
template <>
struct Element<double> {
  __device__ static double from_double(double v) { return v; }
  __device__ static double to_double(double v) { return v; }
};
template <>
struct Element<int32_t> {
  __device__ static int32_t from_double(double v) { return static_cast<int32_t>(v); }
  __device__ static double to_double(int32_t v) { return v; }
};
template <>
struct Element<__nv_bfloat16> {
  __device__ static __nv_bfloat16 from_double(double v) { return __float2bfloat16(static_cast<float>(v)); }
  __device__ static double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }
};
template <>
struct Element<__half> {
  __device__ static __half from_double(double v) { return __float2half(static_cast<float>(v)); }
  __device__ static double to_double(__half v) { return __half2float(v); }
};

template <typename T>
__global__ void fill_pattern_kernel(T* buffer, size_t count, PatternSpec spec, double poison) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double value = spec.role == PatternRole::kPoison ? poison : pattern_value(spec, i);
    buffer[i] = Element<T>::from_double(value);
  }
}

template <typename T>
__global__ void count_mismatches_kernel(const T* buffer, size_t count, PatternSpec spec, double tolerance,
                                        unsigned long long* counter) {
  __shared__ unsigned long long block_wrong;
  if (threadIdx.x == 0) block_wrong = 0;
  __syncthreads();
  unsigned long long wrong = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (!pattern_matches(Element<T>::to_double(buffer[i]), pattern_value(spec, i), tolerance)) ++wrong;
  }
  if (wrong != 0) atomicAdd(&block_wrong, wrong);
  __syncthreads();
  if (threadIdx.x == 0 && block_wrong != 0) atomicAdd(counter, block_wrong);
}

int blocks_for(size_t count) {
  const size_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<int>(needed < kMaxBlocks ? (needed == 0 ? 1 : needed) : kMaxBlocks);
}

template <typename T>
void launch_fill(void* buffer, size_t count, const PatternSpec& spec, double poison, cudaStream_t stream) {
  fill_pattern_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(buffer), count, spec,
                                                                     poison);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_count(const void* buffer, size_t count, const PatternSpec& spec, double tolerance,
                  unsigned long long* counter, cudaStream_t stream) {
  count_mismatches_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(buffer),
                                                                         count, spec, tolerance, counter);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec, cudaStream_t stream) {
  if (count == 0) return;
  const double poison = type == DType::kInt32 ? -2147483648.0 : NAN;
  switch (type) {
    case DType::kFloat32: return launch_fill<float>(buffer, count, spec, poison, stream);
    case DType::kFloat64: return launch_fill<double>(buffer, count, spec, poison, stream);
    case DType::kInt32: return launch_fill<int32_t>(buffer, count, spec, poison, stream);
    case DType::kUInt8: break;  // masks are never verification data
    case DType::kBFloat16: return launch_fill<__nv_bfloat16>(buffer, count, spec, poison, stream);
    case DType::kFloat16: return launch_fill<__half>(buffer, count, spec, poison, stream);
  }
}

void count_mismatches(const void* buffer, size_t count, DType type, const PatternSpec& spec,
                      double tolerance, unsigned long long* counter, cudaStream_t stream) {
  if (count == 0) return;
  switch (type) {
    case DType::kFloat32: return launch_count<float>(buffer, count, spec, tolerance, counter, stream);
    case DType::kFloat64: return launch_count<double>(buffer, count, spec, tolerance, counter, stream);
    case DType::kInt32: return launch_count<int32_t>(buffer, count, spec, tolerance, counter, stream);
    case DType::kUInt8: break;
    case DType::kBFloat16:
      return launch_count<__nv_bfloat16>(buffer, count, spec, tolerance, counter, stream);
    case DType::kFloat16: return launch_count<__half>(buffer, count, spec, tolerance, counter, stream);
  }
}

}  // namespace sb::cuda
