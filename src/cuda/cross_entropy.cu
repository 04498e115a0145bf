// Softmax cross-entropy kernels (cross_entropy.h). Forward: one 256-thread block per row; each thread keeps a
// running (max, sum of exp) pair and the sum of logits over a strided slice (float4 loads when classes % 4 == 0),
// pairs are merged by a warp butterfly and then warp by warp in order; thread 0 finishes the row in fp64.
// A one-block kernel then adds the per-row losses in fp64 in a fixed order. Backward: one block per row,
// p = exp(z - saved logsumexp), dz = scale * (p - q).
#include <cmath>
#include <cstdint>
#include <string>

#include "src/cuda/cross_entropy.h"
#include "src/cuda/cuda_check.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSumThreads = 256;  // a power of two: the tree below halves it

// Running log-sum-exp state: the sum of exp(z - max) over the elements seen.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ void online_add(MaxSum& state, float z) {
  if (z > state.max) {
    state.sum = state.sum * expf(state.max - z) + 1.0f;  // exp(-inf) = 0 for the first element
    state.max = z;
  } else if (z != -INFINITY) {  // -inf adds nothing (and -inf - -inf would be NaN)
    state.sum += expf(z - state.max);
  }
}

// Symmetric in its arguments (fp + and max are commutative), so a butterfly leaves every lane equal.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

template <bool kVec4>
__global__ void cross_entropy_forward_kernel(const float* __restrict__ logits, const int32_t* __restrict__ targets,
                                             float* __restrict__ losses, float* __restrict__ saved_logsumexp,
                                             int64_t classes, double eps, double eps_i, int32_t ignore_index) {
  __shared__ MaxSum warp_state[kWarps];
  __shared__ float warp_logit_sum[kWarps];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * classes;

  MaxSum state{-INFINITY, 0.0f};
  float logit_sum = 0.0f;
  if (kVec4) {
    const float4* z4 = reinterpret_cast<const float4*>(z);
    for (int64_t i = threadIdx.x; i < classes / 4; i += kThreads) {
      const float4 v = z4[i];
      online_add(state, v.x);
      online_add(state, v.y);
      online_add(state, v.z);
      online_add(state, v.w);
      logit_sum += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (int64_t c = threadIdx.x; c < classes; c += kThreads) {
      online_add(state, z[c]);
      logit_sum += z[c];
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, state.max, offset),
                       __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = merge(state, other);
    logit_sum += __shfl_xor_sync(0xffffffffu, logit_sum, offset);
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) {
    warp_state[warp] = state;
    warp_logit_sum[warp] = logit_sum;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  MaxSum total = warp_state[0];
  float total_logits = warp_logit_sum[0];
  for (int w = 1; w < kWarps; ++w) {
    total = merge(total, warp_state[w]);
    total_logits += warp_logit_sum[w];
  }
  const double logsumexp = static_cast<double>(total.max) + log(static_cast<double>(total.sum));
  saved_logsumexp[row] = static_cast<float>(logsumexp);
  const int32_t target = targets[row];
  if (target == ignore_index) {
    losses[row] = 0.0f;
    return;
  }
  if (target < 0 || target >= classes) {  // a data bug upstream: make it loud, read nothing out of bounds
    losses[row] = NAN;
    return;
  }
  const double nll = logsumexp - static_cast<double>(z[target]);
  double loss = nll;
  if (eps > 0.0) {
    // sum_c(-log p_c) = V * logsumexp - sum_c z_c; loss = (1 - eps - eps_i) * nll + eps_i * smooth.
    const double smooth = static_cast<double>(classes) * logsumexp - static_cast<double>(total_logits);
    loss = (1.0 - eps - eps_i) * nll + eps_i * smooth;
  }
  losses[row] = static_cast<float>(loss);
}

// One block: thread i adds rows i, i + 256, ... in order (fp64), then a fixed halving tree.
__global__ void cross_entropy_sum_kernel(const float* __restrict__ losses, const int32_t* __restrict__ targets,
                                         int64_t rows, int32_t ignore_index, float* __restrict__ loss_sum,
                                         int64_t* __restrict__ counted_rows) {
  __shared__ double partial_sum[kSumThreads];
  __shared__ long long partial_count[kSumThreads];
  double sum = 0.0;
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kSumThreads) {
    if (targets[r] != ignore_index) {
      sum += static_cast<double>(losses[r]);
      ++count;
    }
  }
  partial_sum[threadIdx.x] = sum;
  partial_count[threadIdx.x] = count;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      partial_sum[threadIdx.x] += partial_sum[threadIdx.x + half];
      partial_count[threadIdx.x] += partial_count[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *loss_sum = static_cast<float>(partial_sum[0]);
    *counted_rows = static_cast<int64_t>(partial_count[0]);
  }
}

template <bool kVec4>
__global__ void cross_entropy_backward_kernel(const float* __restrict__ logits, const int32_t* __restrict__ targets,
                                              const float* __restrict__ saved_logsumexp,
                                              float* __restrict__ dlogits, int64_t classes, float q_target,
                                              float q_other, int32_t ignore_index, float scale) {
  const int64_t row = blockIdx.x;
  const float* z = logits + row * classes;
  float* dz = dlogits + row * classes;
  const int32_t target = targets[row];
  if (target == ignore_index || target < 0 || target >= classes) {
    const float fill = target == ignore_index ? 0.0f : NAN;
    for (int64_t c = threadIdx.x; c < classes; c += kThreads) dz[c] = fill;
    return;
  }
  const float logsumexp = saved_logsumexp[row];
  if (kVec4) {
    const float4* z4 = reinterpret_cast<const float4*>(z);
    float4* dz4 = reinterpret_cast<float4*>(dz);
    for (int64_t i = threadIdx.x; i < classes / 4; i += kThreads) {
      const float4 v = z4[i];
      const int64_t c = 4 * i;
      dz4[i] = make_float4(scale * (expf(v.x - logsumexp) - (c == target ? q_target : q_other)),
                           scale * (expf(v.y - logsumexp) - (c + 1 == target ? q_target : q_other)),
                           scale * (expf(v.z - logsumexp) - (c + 2 == target ? q_target : q_other)),
                           scale * (expf(v.w - logsumexp) - (c + 3 == target ? q_target : q_other)));
    }
  } else {
    for (int64_t c = threadIdx.x; c < classes; c += kThreads) {
      dz[c] = scale * (expf(z[c] - logsumexp) - (c == target ? q_target : q_other));
    }
  }
}

void check_arguments(const char* op, int64_t rows, int64_t classes, float label_smoothing) {
  SB_CHECK(rows >= 0, std::string(op) + ": rows must be >= 0");
  SB_CHECK(rows <= INT32_MAX, std::string(op) + ": rows must fit a 1-D grid (<= 2^31 - 1)");
  SB_CHECK(classes >= 1, std::string(op) + ": classes must be >= 1");
  SB_CHECK(label_smoothing >= 0.0f && label_smoothing < 1.0f,
           std::string(op) + ": label_smoothing must be in [0, 1)");
  SB_CHECK(label_smoothing == 0.0f || classes >= 2,
           std::string(op) + ": label smoothing needs at least 2 classes (eps / (classes - 1))");
}

// The CPU reference's off-target share: eps / (V - 1), 0 without smoothing.
double off_target_probability(int64_t classes, float label_smoothing) {
  return label_smoothing > 0.0f ? static_cast<double>(label_smoothing) / static_cast<double>(classes - 1) : 0.0;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void softmax_cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                                   float* saved_logsumexp, float* loss_sum, int64_t* counted_rows, int64_t rows,
                                   int64_t classes, float label_smoothing, int32_t ignore_index,
                                   cudaStream_t stream) {
  check_arguments("softmax_cross_entropy_forward", rows, classes, label_smoothing);
  SB_CHECK(loss_sum && counted_rows, "softmax_cross_entropy_forward: null pointer");
  if (rows > 0) {
    SB_CHECK(logits && targets && losses && saved_logsumexp, "softmax_cross_entropy_forward: null pointer");
    const double eps = label_smoothing;
    const double eps_i = off_target_probability(classes, label_smoothing);
    const unsigned grid = static_cast<unsigned>(rows);
    if (classes % 4 == 0 && aligned16(logits)) {
      cross_entropy_forward_kernel<true><<<grid, kThreads, 0, stream>>>(logits, targets, losses, saved_logsumexp,
                                                                         classes, eps, eps_i, ignore_index);
    } else {
      cross_entropy_forward_kernel<false><<<grid, kThreads, 0, stream>>>(logits, targets, losses, saved_logsumexp,
                                                                          classes, eps, eps_i, ignore_index);
    }
    SB_CUDA_CHECK_LAUNCH();
  }
  // Also for rows == 0: the sums are written (0 and 0), as the CPU reference writes them.
  cross_entropy_sum_kernel<<<1, kSumThreads, 0, stream>>>(losses, targets, rows, ignore_index, loss_sum,
                                                          counted_rows);
  SB_CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy_backward(const float* logits, const int32_t* targets, const float* saved_logsumexp,
                                    float* dlogits, int64_t rows, int64_t classes, float label_smoothing,
                                    int32_t ignore_index, float scale, cudaStream_t stream) {
  check_arguments("softmax_cross_entropy_backward", rows, classes, label_smoothing);
  if (rows == 0) return;
  SB_CHECK(logits && targets && saved_logsumexp && dlogits, "softmax_cross_entropy_backward: null pointer");
  const float q_other = static_cast<float>(off_target_probability(classes, label_smoothing));
  const float q_target = static_cast<float>(1.0 - static_cast<double>(label_smoothing));
  const unsigned grid = static_cast<unsigned>(rows);
  if (classes % 4 == 0 && aligned16(logits) && aligned16(dlogits)) {
    cross_entropy_backward_kernel<true><<<grid, kThreads, 0, stream>>>(logits, targets, saved_logsumexp, dlogits,
                                                                        classes, q_target, q_other, ignore_index,
                                                                        scale);
  } else {
    cross_entropy_backward_kernel<false><<<grid, kThreads, 0, stream>>>(logits, targets, saved_logsumexp, dlogits,
                                                                         classes, q_target, q_other, ignore_index,
                                                                         scale);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
