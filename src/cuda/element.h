// Element types of the CUDA kernels. Activations and their gradients are stored as T = float, bf16 or fp16
// (mixed precision: --precision bf16 | fp16); every kernel loads T, computes in fp32 and rounds once when it
// stores T. Parameters (weights, biases, LayerNorm gains, embedding tables) and their gradients stay fp32: a kernel
// that reads an activation and a parameter takes `const T*` for the one and `const float*` for the other.
// Kernel wrappers are templates declared in their headers and instantiated for float and bf16 in their .cu
// files (SB_INSTANTIATE_FOR_ELEMENTS: float, bf16, fp16), so host code needs no CUDA compiler to call them.
// fp16 has 3 more mantissa bits than bf16 but a range of only ±65504: fp16 graphs scale the loss
// (include/scalebench/loss_scale.h) so that small gradients stay representable; overflow becomes inf.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sb::cuda {

using bf16 = __nv_bfloat16;
using fp16 = __half;

template <typename T>
__host__ __device__ inline float to_float(T value);
template <>
__host__ __device__ inline float to_float<float>(float value) { return value; }
template <>
__host__ __device__ inline float to_float<bf16>(bf16 value) { return __bfloat162float(value); }
template <>
__host__ __device__ inline float to_float<fp16>(fp16 value) { return __half2float(value); }

template <typename T>
__host__ __device__ inline T from_float(float value);
template <>
__host__ __device__ inline float from_float<float>(float value) { return value; }
template <>
__host__ __device__ inline bf16 from_float<bf16>(float value) { return __float2bfloat16_rn(value); }
template <>
__host__ __device__ inline fp16 from_float<fp16>(float value) { return __float2half_rn(value); }  // > 65504: inf

// Elements of T in one 16-byte vector access (4 floats, 8 bf16 or fp16).
template <typename T>
constexpr int kElementsPer16Bytes = static_cast<int>(16 / sizeof(T));

// W consecutive elements of T moved as one access, aligned to the whole pack up to 16 bytes (the widest
// load): Pack<T, kElementsPer16Bytes<T>> is one 16-byte vector, a wider pack (8 floats beside 8 bf16) is two
// 16-byte accesses, and Pack<T, 1> is a plain scalar. Kernels reinterpret suitably aligned rows as packs.
template <typename T, int W>
struct alignas(W * sizeof(T) < 16 ? W * sizeof(T) : 16) Pack {
  T element[W];
};

}  // namespace sb::cuda

// Explicit instantiations of a kernel wrapper template for every element type, in its .cu file:
//   #define SB_GELU(T) template void gelu_forward<T>(const T*, T*, int64_t, cudaStream_t);
//   SB_INSTANTIATE_FOR_ELEMENTS(SB_GELU)
#define SB_INSTANTIATE_FOR_ELEMENTS(MACRO) \
  MACRO(float)                             \
  MACRO(::sb::cuda::bf16)                  \
  MACRO(::sb::cuda::fp16)
