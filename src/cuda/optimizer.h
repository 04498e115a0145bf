// The optimizers and global-norm gradient clipping on the GPU: the arguments of src/cpu/optimizer.h plus a
// stream; every pointer is device memory (`scratch` and `grad_norm_squared` included).
#pragma once

#include <cuda_runtime_api.h>

#include "scalebench/loss_scale.h"
#include "src/cpu/optimizer.h"
#include "src/cuda/step_value.h"

namespace sb::cuda {

// scratch[0] = sum of grads[i]^2 in double, deterministic: cpu::kGradNormBlocks blocks whatever the GPU, each a
// fixed-order partial into scratch[1 + block], then one block sums the partials in a fixed tree. With `add`,
// scratch[0] += that sum instead: a shard of several ranges sums range by range, in order (--strategy zero2).
void grad_norm_squared(const float* grads, int64_t n, double* scratch, cudaStream_t stream, bool add = false);

// One fused pass per step: reads p, g and the state, writes p and the state (AdamW 7 floats per parameter,
// SGD 5); the clipping factor is computed in the kernel from *grad_norm_squared, so the host never waits.
// `step` (from 1) is a StepValue (src/cuda/step_value.h), resolved on the device, and the Adam family's bias
// correction is computed from it there, so that a step replayed from a CUDA graph corrects with its own count;
// cuda::eager_value(step) is the CPU's `step`.
//
// With `loss_scale` (device memory; null: no loss scaling) the gradients are S = loss_scale->scale times the
// true ones, as GradScaler's unscale_ + finite check + step + update, all on the device: grad_norm_squared
// (required) is of the scaled gradients; when it is not finite the step is skipped (params and state are not
// written); otherwise every gradient is multiplied by 1/S before clipping (the norm unscaled too) and the
// update, with bias correction at applied_optimizer_step(step, *loss_scale). Then one thread replaces
// *loss_scale by next_loss_scale(..., config). Call it after the gradients are final (all-reduced).
// `state_stride` (0: optimizer_state_stride(n)) is the distance between the state buffers: a slice of a larger
// flat buffer passes its offset pointers and the whole buffer's stride. A step over several slices unscales every
// slice with the same scale and replaces it after the last alone (`update_loss_scale` false before that).
void optimizer_step(float* params, const float* grads, float* state, int64_t n, const OptimizerSettings& settings,
                    StepValue step, const double* grad_norm_squared, cudaStream_t stream,
                    LossScaleState* loss_scale = nullptr, const LossScaleConfig& loss_scale_config = {},
                    int64_t state_stride = 0, bool update_loss_scale = true);

}  // namespace sb::cuda
