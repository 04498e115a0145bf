// Masked attention softmax kernels (softmax.h): one warp per (b, h, q) row, lanes striding the keys so that
// each warp access is 32 consecutive elements (coalesced). Max, sum of exponentials and the backward dot
// product are fp32 warp butterfly reductions (fixed order: reproducible) over the T inputs widened to fp32.
// Valid keys are the prefix [0, valid) as in the CPU reference; everything past it is written as exactly 0.
// Rows of up to 512 keys are held in registers (one read of the inputs); longer rows stream three times.
#include <cstdint>
#include <string>
#include <type_traits>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/softmax.h"

namespace sb::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = kWarpsPerBlock * 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Unmasked keys of `row` (a prefix): key_lengths[b] clamped to [0, k_len], and at most q + 1 when causal.
__device__ __forceinline__ int64_t valid_keys(int64_t row, int64_t heads, int64_t q_len, int64_t k_len,
                                              const int32_t* key_lengths, bool causal) {
  int64_t valid = k_len;
  if (key_lengths != nullptr) {
    const int64_t length = key_lengths[row / (heads * q_len)];
    valid = length < 0 ? 0 : (length > k_len ? k_len : length);
  }
  if (causal) {
    const int64_t q = row % q_len;
    if (q + 1 < valid) valid = q + 1;
  }
  return valid;
}

template <typename T>
__global__ void masked_softmax_forward_kernel(const T* __restrict__ scores, T* __restrict__ probs, int64_t rows,
                                              int64_t heads, int64_t q_len, int64_t k_len, float scale,
                                              const int32_t* __restrict__ key_lengths, bool causal) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x & 31;
  const T* s = scores + row * k_len;
  T* p = probs + row * k_len;
  const int64_t valid = valid_keys(row, heads, q_len, k_len, key_lengths, causal);

  float max_logit = -INFINITY;
  for (int64_t k = lane; k < valid; k += 32) max_logit = fmaxf(max_logit, scale * to_float(s[k]));
  max_logit = warp_max(max_logit);
  float sum = 0.0f;
  for (int64_t k = lane; k < valid; k += 32) sum += expf(scale * to_float(s[k]) - max_logit);
  sum = warp_sum(sum);  // >= 1 whenever valid > 0 (the max term is exp(0))
  for (int64_t k = lane; k < k_len; k += 32) {
    p[k] = from_float<T>(k < valid ? expf(scale * to_float(s[k]) - max_logit) / sum : 0.0f);
  }
}

template <typename T>
__global__ void masked_softmax_backward_kernel(const T* __restrict__ probs, const T* __restrict__ dprobs,
                                               T* __restrict__ dscores, int64_t rows, int64_t heads, int64_t q_len,
                                               int64_t k_len, float scale, const int32_t* __restrict__ key_lengths,
                                               bool causal) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const T* p = probs + row * k_len;
  const T* dp = dprobs + row * k_len;
  T* ds = dscores + row * k_len;
  const int64_t valid = valid_keys(row, heads, q_len, k_len, key_lengths, causal);

  float dot = 0.0f;
  for (int64_t k = lane; k < valid; k += 32) dot += to_float(p[k]) * to_float(dp[k]);
  dot = warp_sum(dot);
  for (int64_t k = lane; k < k_len; k += 32) {
    ds[k] = from_float<T>(k < valid ? scale * to_float(p[k]) * (to_float(dp[k]) - dot) : 0.0f);
  }
}

// The same two kernels with the row held in registers (kPerLane elements per lane, rows of up to
// 32 * kPerLane keys): one read of the inputs instead of three (forward) or two (backward), and one exp per
// element instead of two. Same fp32 operations in the same order, so the results are bit-identical.
template <typename T, int kPerLane>
__global__ void masked_softmax_forward_registers(const T* __restrict__ scores, T* __restrict__ probs, int64_t rows,
                                                 int64_t heads, int64_t q_len, int64_t k_len, float scale,
                                                 const int32_t* __restrict__ key_lengths, bool causal) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const T* s = scores + row * k_len;
  T* p = probs + row * k_len;
  const int64_t valid = valid_keys(row, heads, q_len, k_len, key_lengths, causal);
  float v[kPerLane];
  float max_logit = -INFINITY;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int64_t k = lane + 32 * j;
    v[j] = k < valid ? scale * to_float(s[k]) : -INFINITY;
    max_logit = fmaxf(max_logit, v[j]);
  }
  max_logit = warp_max(max_logit);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    v[j] = lane + 32 * j < valid ? expf(v[j] - max_logit) : 0.0f;
    sum += v[j];
  }
  sum = warp_sum(sum);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int64_t k = lane + 32 * j;
    if (k < k_len) p[k] = from_float<T>(k < valid ? v[j] / sum : 0.0f);
  }
}

template <typename T, int kPerLane>
__global__ void masked_softmax_backward_registers(const T* __restrict__ probs, const T* __restrict__ dprobs,
                                                  T* __restrict__ dscores, int64_t rows, int64_t heads,
                                                  int64_t q_len, int64_t k_len, float scale,
                                                  const int32_t* __restrict__ key_lengths, bool causal) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const T* p = probs + row * k_len;
  const T* dp = dprobs + row * k_len;
  T* ds = dscores + row * k_len;
  const int64_t valid = valid_keys(row, heads, q_len, k_len, key_lengths, causal);
  float pv[kPerLane], dv[kPerLane];
  float dot = 0.0f;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int64_t k = lane + 32 * j;
    pv[j] = k < valid ? to_float(p[k]) : 0.0f;
    dv[j] = k < valid ? to_float(dp[k]) : 0.0f;
    dot += pv[j] * dv[j];
  }
  dot = warp_sum(dot);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int64_t k = lane + 32 * j;
    if (k < k_len) ds[k] = from_float<T>(k < valid ? scale * pv[j] * (dv[j] - dot) : 0.0f);
  }
}

// Calls launch(std::integral_constant<int, N>) with the smallest N in {1, 2, 4, 8, 16} such that a row of
// k_len keys fits in 32 * N registers per warp; false (nothing launched) for longer rows.
template <typename Launch>
bool with_registers_per_lane(int64_t k_len, Launch&& launch) {
  if (k_len <= 32) return launch(std::integral_constant<int, 1>{}), true;
  if (k_len <= 64) return launch(std::integral_constant<int, 2>{}), true;
  if (k_len <= 128) return launch(std::integral_constant<int, 4>{}), true;
  if (k_len <= 256) return launch(std::integral_constant<int, 8>{}), true;
  if (k_len <= 512) return launch(std::integral_constant<int, 16>{}), true;
  return false;
}

// Rows of the launch, or 0 when there is nothing to do.
int64_t checked_rows(const char* op, int64_t batch, int64_t heads, int64_t q_len, int64_t k_len) {
  SB_CHECK(batch >= 0 && heads >= 0 && q_len >= 0 && k_len >= 0,
           std::string(op) + ": batch, heads, q_len and k_len must be >= 0");
  if (batch == 0 || heads == 0 || q_len == 0 || k_len == 0) return 0;
  const int64_t rows = batch * heads * q_len;
  SB_CHECK((rows + kWarpsPerBlock - 1) / kWarpsPerBlock <= INT32_MAX, std::string(op) + ": too many rows");
  return rows;
}

}  // namespace

template <typename T>
void masked_softmax_forward(const T* scores, T* probs, int64_t batch, int64_t heads, int64_t q_len, int64_t k_len,
                            float scale, const int32_t* key_lengths, bool causal, cudaStream_t stream) {
  const int64_t rows = checked_rows("masked_softmax_forward", batch, heads, q_len, k_len);
  if (rows == 0) return;
  SB_CHECK(scores && probs, "masked_softmax_forward: null pointer");
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const bool cached = with_registers_per_lane(k_len, [&](auto per_lane) {
    masked_softmax_forward_registers<T, decltype(per_lane)::value><<<blocks, kThreads, 0, stream>>>(
        scores, probs, rows, heads, q_len, k_len, scale, key_lengths, causal);
  });
  if (!cached) {
    masked_softmax_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(scores, probs, rows, heads, q_len, k_len,
                                                                      scale, key_lengths, causal);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void masked_softmax_backward(const T* probs, const T* dprobs, T* dscores, int64_t batch, int64_t heads,
                             int64_t q_len, int64_t k_len, float scale, const int32_t* key_lengths, bool causal,
                             cudaStream_t stream) {
  const int64_t rows = checked_rows("masked_softmax_backward", batch, heads, q_len, k_len);
  if (rows == 0) return;
  SB_CHECK(probs && dprobs && dscores, "masked_softmax_backward: null pointer");
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const bool cached = with_registers_per_lane(k_len, [&](auto per_lane) {
    masked_softmax_backward_registers<T, decltype(per_lane)::value><<<blocks, kThreads, 0, stream>>>(
        probs, dprobs, dscores, rows, heads, q_len, k_len, scale, key_lengths, causal);
  });
  if (!cached) {
    masked_softmax_backward_kernel<T><<<blocks, kThreads, 0, stream>>>(probs, dprobs, dscores, rows, heads, q_len,
                                                                       k_len, scale, key_lengths, causal);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_SOFTMAX(T)                                                                                              \
  template void masked_softmax_forward<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, float, const int32_t*, \
                                          bool, cudaStream_t);                                                     \
  template void masked_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, float,      \
                                           const int32_t*, bool, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_SOFTMAX)
#undef SB_SOFTMAX

}  // namespace sb::cuda

// The softmax family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_softmax_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"masked_softmax",
       SB_TYPED(cuda::masked_softmax_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                             size_attr(n, "heads"), size_attr(n, "q"), size_attr(n, "k"),
                                             float_attr(n, "scale"),
                                             n.inputs.size() > 1 ? e.at<int32_t>(n.inputs[1]) : nullptr,
                                             size_attr(n, "causal") != 0, e.stream()))},
      {"masked_softmax_backward",
       SB_TYPED(cuda::masked_softmax_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                              size_attr(n, "batch"), size_attr(n, "heads"), size_attr(n, "q"),
                                              size_attr(n, "k"), float_attr(n, "scale"),
                                              n.inputs.size() > 2 ? e.at<int32_t>(n.inputs[2]) : nullptr,
                                              size_attr(n, "causal") != 0, e.stream()))},
  });
}

}  // namespace sb::cuda_binding
