// CUDA dropout (src/cuda/dropout.h). One thread per Philox block: group g covers elements 4g .. 4g+3 and
// draws philox4x32(counter offset + g, key seed), word j deciding element 4g + j, exactly the CPU mapping.
// When x and y are 16-byte aligned and mask 4-byte aligned a full group moves as one float4 and one uchar4;
// the last partial group and misaligned pointers go element by element (the lane loop is unrolled so the
// Philox words stay in registers). Grid-stride, 256 threads per block, at most one full wave.
// The scale 1.0f / (1.0f - p) is computed on the host with the same IEEE division as the CPU and passed in,
// so y = x * scale is the identical fp32 product.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/dropout.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline bool keep_element(uint32_t bits, float p) { return uniform_from_bits(bits) >= p; }

// y may be x: every element is read before its own thread writes it.
template <bool kVector>
__global__ void dropout_forward_kernel(const float* x, float* y, uint8_t* mask, int64_t n, float p, float scale,
                                       PhiloxKey key, uint64_t offset) {
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const PhiloxCounter bits = philox4x32(philox_counter(offset + static_cast<uint64_t>(g)), key);
    const int64_t first = g * 4;
    if (kVector && first + 4 <= n) {
      const float4 v = reinterpret_cast<const float4*>(x)[g];
      const bool k0 = keep_element(bits.word[0], p);
      const bool k1 = keep_element(bits.word[1], p);
      const bool k2 = keep_element(bits.word[2], p);
      const bool k3 = keep_element(bits.word[3], p);
      reinterpret_cast<float4*>(y)[g] = make_float4(k0 ? v.x * scale : 0.0f, k1 ? v.y * scale : 0.0f,
                                                    k2 ? v.z * scale : 0.0f, k3 ? v.w * scale : 0.0f);
      reinterpret_cast<uchar4*>(mask)[g] = make_uchar4(k0 ? 1 : 0, k1 ? 1 : 0, k2 ? 1 : 0, k3 ? 1 : 0);
    } else {
#pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = first + lane;
        if (i < n) {
          const bool keep = keep_element(bits.word[lane], p);
          const float value = x[i];
          mask[i] = keep ? 1 : 0;
          y[i] = keep ? value * scale : 0.0f;
        }
      }
    }
  }
}

// dx may be dy.
template <bool kVector>
__global__ void dropout_backward_kernel(const float* dy, const uint8_t* mask, float* dx, int64_t n,
                                        float scale) {
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t first = g * 4;
    if (kVector && first + 4 <= n) {
      const float4 v = reinterpret_cast<const float4*>(dy)[g];
      const uchar4 m = reinterpret_cast<const uchar4*>(mask)[g];
      reinterpret_cast<float4*>(dx)[g] = make_float4(m.x != 0 ? v.x * scale : 0.0f, m.y != 0 ? v.y * scale : 0.0f,
                                                     m.z != 0 ? v.z * scale : 0.0f, m.w != 0 ? v.w * scale : 0.0f);
    } else {
#pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        const int64_t i = first + lane;
        if (i < n) dx[i] = mask[i] != 0 ? dy[i] * scale : 0.0f;
      }
    }
  }
}

void check_arguments(const char* op, int64_t n, float p) {
  if (n < 0) throw UsageError(std::string("cuda::") + op + ": negative element count " + std::to_string(n));
  if (!(p >= 0.0f && p < 1.0f)) {
    throw UsageError(std::string("cuda::") + op + ": dropout probability " + std::to_string(p) +
                     " outside [0, 1)");
  }
}

bool aligned_4(const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; }

}  // namespace

void dropout_forward(const float* x, float* y, uint8_t* mask, int64_t n, float p, uint64_t seed,
                     uint64_t offset, cudaStream_t stream) {
  check_arguments("dropout_forward", n, p);
  if (n == 0) return;
  const float scale = 1.0f / (1.0f - p);
  const int blocks = detail::grid_stride_blocks((n + 3) / 4, kThreads);
  if (detail::aligned_16(x) && detail::aligned_16(y) && aligned_4(mask)) {
    dropout_forward_kernel<true><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, p, scale, philox_key(seed),
                                                                  offset);
  } else {
    dropout_forward_kernel<false><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, p, scale, philox_key(seed),
                                                                   offset);
  }
  SB_CUDA_CHECK_LAUNCH();
}

void dropout_backward(const float* dy, const uint8_t* mask, float* dx, int64_t n, float p,
                      cudaStream_t stream) {
  check_arguments("dropout_backward", n, p);
  if (n == 0) return;
  const float scale = 1.0f / (1.0f - p);
  const int blocks = detail::grid_stride_blocks((n + 3) / 4, kThreads);
  if (detail::aligned_16(dy) && detail::aligned_16(dx) && aligned_4(mask)) {
    dropout_backward_kernel<true><<<blocks, kThreads, 0, stream>>>(dy, mask, dx, n, scale);
  } else {
    dropout_backward_kernel<false><<<blocks, kThreads, 0, stream>>>(dy, mask, dx, n, scale);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
