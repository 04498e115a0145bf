// Fused optimizers and the gradient norm (src/cuda/optimizer.h). One kernel template, instantiated once per
// optimizer: a grid-stride pass with 16-byte vector accesses when every buffer is aligned (scalar otherwise
// and for the tail). fp32 arithmetic; agrees with the CPU's double to ~1e-6 relative per step. Loss scaling
// (fp16): the kernel reads the scale and skips or unscales; a one-thread kernel then updates the scale. The bias
// correction is computed on the device from the step count, scaled or not (one code path for eager and
// CUDA-graph-replayed steps, whose count comes from the device).
#include <cmath>

#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/cuda/optimizer.h"

namespace sb::cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int kFinalThreads = 1024;
static_assert(cpu::kGradNormBlocks == kFinalThreads, "one final thread per partial");

// Fixed-order tree over a block's doubles in shared memory; thread 0 returns the sum.
template <int kThreads>
__device__ double block_sum(double value, double* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  return shared[0];
}

__global__ void norm_partials_kernel(const float* grads, int64_t n, bool vector, double* partials) {
  __shared__ double shared[kNormThreads];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double sum = 0;
  int64_t tail = 0;
  if (vector) {
    const float4* grads4 = reinterpret_cast<const float4*>(grads);
    for (int64_t i = start; i < n / 4; i += stride) {
      const float4 g = grads4[i];
      sum += static_cast<double>(g.x) * g.x + static_cast<double>(g.y) * g.y + static_cast<double>(g.z) * g.z +
             static_cast<double>(g.w) * g.w;
    }
    tail = n / 4 * 4;
  }
  for (int64_t i = tail + start; i < n; i += stride) sum += static_cast<double>(grads[i]) * grads[i];
  const double total = block_sum<kNormThreads>(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void norm_final_kernel(double* scratch, bool add) {
  __shared__ double shared[kFinalThreads];
  const double total = block_sum<kFinalThreads>(scratch[1 + threadIdx.x], shared);
  if (threadIdx.x == 0) scratch[0] = add ? scratch[0] + total : total;
}

struct StepScalars {
  float lr, beta1, beta2, epsilon, weight_decay, momentum;
  float step_size;         // lr / (1 - beta1^t), set in the kernel
  float correction2_sqrt;  // sqrt(1 - beta2^t), set in the kernel
  float max_norm;          // 0: no clipping
  const double* norm_squared;
  const LossScaleState* loss_scale;  // null: gradients are unscaled
  StepValue step;                    // t from 1, before skipped steps are subtracted (loss scaling)
};

constexpr bool two_buffers(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW || kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamax;
}

// The formulas of src/cpu/optimizer.h for one element; g already clipped.
template <OptimizerKind kKind>
__device__ __forceinline__ void update(float& p, float g, float& first, float& second, const StepScalars& c) {
  if constexpr (kKind == OptimizerKind::kAdamW) {
    p *= 1.0f - c.lr * c.weight_decay;
  } else {
    g += c.weight_decay * p;
  }
  if constexpr (kKind == OptimizerKind::kAdamW || kKind == OptimizerKind::kAdam) {
    first = c.beta1 * first + (1.0f - c.beta1) * g;
    second = c.beta2 * second + (1.0f - c.beta2) * g * g;
    p -= c.step_size * first / (sqrtf(second) / c.correction2_sqrt + c.epsilon);
  } else if constexpr (kKind == OptimizerKind::kAdamax) {
    first = c.beta1 * first + (1.0f - c.beta1) * g;
    second = fmaxf(c.beta2 * second, fabsf(g) + c.epsilon);
    p -= c.step_size * first / second;
  } else {
    first = c.momentum * first + g;
    p -= c.lr * (kKind == OptimizerKind::kNag ? g + c.momentum * first : first);
  }
}

template <OptimizerKind kKind, bool kVector>
__global__ void optimizer_kernel(float* params, const float* grads, float* first, float* second, int64_t n,
                                 StepScalars c) {
  float unscale = 1.0f;
  LossScaleState scaling{};
  if (c.loss_scale != nullptr) {
    if (!gradients_finite(*c.norm_squared)) return;  // a skipped step, in every thread: nothing is written
    scaling = *c.loss_scale;
    unscale = 1.0f / scaling.scale;  // exact: S is a power of two (initial and factors are)
  }
  if constexpr (two_buffers(kKind)) {
    // The Adam family's bias correction, computed here rather than on the host because the step count of a step
    // replayed from a CUDA graph exists only on the device (StepValue); every step, eager or replayed, takes this
    // one path. The host computed it with glibc's pow before (and the CPU reference still does): CUDA's double pow
    // may differ from it in the double's last place, which almost never survives the rounding to float; the GPU
    // tests against the CPU keep their tolerances. Thread 0 of each block computes it for the block.
    __shared__ float correction[2];
    if (threadIdx.x == 0) {
      const double t = static_cast<double>(applied_optimizer_step(c.step.resolve(), scaling));
      correction[0] = static_cast<float>(static_cast<double>(c.lr) / (1.0 - pow(static_cast<double>(c.beta1), t)));
      correction[1] = static_cast<float>(sqrt(1.0 - pow(static_cast<double>(c.beta2), t)));
    }
    __syncthreads();
    c.step_size = correction[0];
    c.correction2_sqrt = correction[1];
  }
  float clip = 1.0f;  // from the unscaled norm, as clip_grad_norm_ after GradScaler.unscale_
  if (c.max_norm > 0) clip = static_cast<float>(fmin(1.0, c.max_norm / (sqrt(*c.norm_squared) * unscale + 1e-6)));
  clip *= unscale;  // one factor per gradient; multiplying by a power of two is exact
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if constexpr (kVector) {
    for (int64_t i = start; i < n / 4; i += stride) {
      float4 p = reinterpret_cast<float4*>(params)[i];
      const float4 g = reinterpret_cast<const float4*>(grads)[i];
      float4 a = reinterpret_cast<float4*>(first)[i];
      float4 b{};
      if constexpr (two_buffers(kKind)) b = reinterpret_cast<float4*>(second)[i];
      update<kKind>(p.x, clip * g.x, a.x, b.x, c);
      update<kKind>(p.y, clip * g.y, a.y, b.y, c);
      update<kKind>(p.z, clip * g.z, a.z, b.z, c);
      update<kKind>(p.w, clip * g.w, a.w, b.w, c);
      reinterpret_cast<float4*>(params)[i] = p;
      reinterpret_cast<float4*>(first)[i] = a;
      if constexpr (two_buffers(kKind)) reinterpret_cast<float4*>(second)[i] = b;
    }
    tail = n / 4 * 4;
  }
  for (int64_t i = tail + start; i < n; i += stride) {
    float p = params[i], a = first[i], b = 0.0f;
    if constexpr (two_buffers(kKind)) b = second[i];
    update<kKind>(p, clip * grads[i], a, b, c);
    params[i] = p;
    first[i] = a;
    if constexpr (two_buffers(kKind)) second[i] = b;
  }
}

template <OptimizerKind kKind>
void launch(float* params, const float* grads, float* state, int64_t n, int64_t state_stride, const StepScalars& c,
            cudaStream_t stream) {
  constexpr int threads = 256;
  float* second = two_buffers(kKind) ? state + state_stride : nullptr;
  const bool vector = detail::aligned_16(params) && detail::aligned_16(grads) && detail::aligned_16(state) &&
                      (second == nullptr || detail::aligned_16(second));
  const int blocks = detail::grid_stride_blocks(vector ? (n + 3) / 4 : n, threads);
  if (vector) {
    optimizer_kernel<kKind, true><<<blocks, threads, 0, stream>>>(params, grads, state, second, n, c);
  } else {
    optimizer_kernel<kKind, false><<<blocks, threads, 0, stream>>>(params, grads, state, second, n, c);
  }
  SB_CUDA_CHECK_LAUNCH();
}

// Runs after the optimizer kernel (same stream), which read the scale this one replaces.
__global__ void loss_scale_update_kernel(LossScaleState* state, const double* norm_squared, LossScaleConfig config) {
  *state = next_loss_scale(*state, gradients_finite(*norm_squared), config);
}

}  // namespace

void grad_norm_squared(const float* grads, int64_t n, double* scratch, cudaStream_t stream, bool add) {
  norm_partials_kernel<<<cpu::kGradNormBlocks, kNormThreads, 0, stream>>>(grads, n > 0 ? n : 0,
                                                                          detail::aligned_16(grads), scratch + 1);
  SB_CUDA_CHECK_LAUNCH();
  norm_final_kernel<<<1, kFinalThreads, 0, stream>>>(scratch, add);
  SB_CUDA_CHECK_LAUNCH();
}

void optimizer_step(float* params, const float* grads, float* state, int64_t n, const OptimizerSettings& s,
                    StepValue step, const double* grad_norm_squared, cudaStream_t stream, LossScaleState* loss_scale,
                    const LossScaleConfig& loss_scale_config, int64_t state_stride, bool update_loss_scale) {
  if (state_stride == 0) state_stride = cpu::optimizer_state_stride(n);
  if (state_stride < n) throw UsageError("optimizer_step: the state stride is shorter than the parameters");
  if (s.max_grad_norm > 0 && grad_norm_squared == nullptr) {
    throw UsageError("optimizer_step: clipping needs the gradients' squared norm");
  }
  if (loss_scale != nullptr && grad_norm_squared == nullptr) {
    throw UsageError("optimizer_step: loss scaling needs the gradients' squared norm (the overflow check)");
  }
  if (loss_scale != nullptr && loss_scale_config.growth_interval < 1) {
    throw UsageError("optimizer_step: the loss scale's growth interval must be >= 1");
  }
  StepScalars c;
  c.lr = s.learning_rate;
  c.beta1 = s.beta1;
  c.beta2 = s.beta2;
  c.epsilon = s.epsilon;
  c.weight_decay = s.weight_decay;
  c.momentum = s.momentum;
  c.step_size = 0.0f;  // the kernel's bias correction
  c.correction2_sqrt = 0.0f;
  c.max_norm = s.max_grad_norm;
  c.norm_squared = grad_norm_squared;
  c.loss_scale = loss_scale;
  c.step = step;
  if (n > 0) {
    switch (s.kind) {
      case OptimizerKind::kAdamW: launch<OptimizerKind::kAdamW>(params, grads, state, n, state_stride, c, stream); break;
      case OptimizerKind::kAdam: launch<OptimizerKind::kAdam>(params, grads, state, n, state_stride, c, stream); break;
      case OptimizerKind::kAdamax: launch<OptimizerKind::kAdamax>(params, grads, state, n, state_stride, c, stream); break;
      case OptimizerKind::kSgdMomentum: launch<OptimizerKind::kSgdMomentum>(params, grads, state, n, state_stride, c, stream); break;
      case OptimizerKind::kNag: launch<OptimizerKind::kNag>(params, grads, state, n, state_stride, c, stream); break;
    }
  }
  if (loss_scale != nullptr && update_loss_scale) {
    loss_scale_update_kernel<<<1, 1, 0, stream>>>(loss_scale, grad_norm_squared, loss_scale_config);
    SB_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace sb::cuda
