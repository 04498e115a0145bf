// Dynamic loss scaling for fp16 mixed precision, as torch.cuda.amp.GradScaler does it. fp16 holds ±65504 with
// 10 mantissa bits, so gradients below ~6e-8 vanish: the backward pass starts from S times the loss's unit
// gradient, every gradient is S times the true one, and the optimizer step multiplies by 1/S before clipping
// and the update. A step whose gradients hold inf or NaN (S too large) is skipped and S halved; after
// `growth_interval` consecutive finite steps S doubles. The state lives in device memory and is updated by
// the step itself, so training never waits for the host; the update rule below is the one the CUDA kernel
// runs (one thread), so host tests check the kernel's rule. Wiring: src/cuda/optimizer.h, the CUDA executor.
#pragma once

#include <cstdint>

#include "scalebench/host_device.h"

namespace sb {

// kAuto: on exactly when the graph stores fp16 tensors (--precision fp16); kOn / kOff force it (tests).
enum class LossScaling { kAuto, kOn, kOff };

// GradScaler's defaults.
struct LossScaleConfig {
  LossScaling mode = LossScaling::kAuto;
  float initial_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int32_t growth_interval = 2000;  // consecutive finite steps before the scale grows
};

// In device memory while training; Executor::loss_scale_state reads it back.
struct LossScaleState {
  float scale = 65536.0f;     // S: the loss's gradient seed and the divisor of the step's gradients
  int32_t growth_tracker = 0;  // finite steps since S last changed
  int64_t skipped_steps = 0;  // steps whose gradients held inf or NaN (parameters and optimizer state untouched)
};

SB_HOST_DEVICE inline LossScaleState initial_loss_scale_state(const LossScaleConfig& config) {
  LossScaleState state;
  state.scale = config.initial_scale;
  return state;
}

// Every gradient is finite exactly when the double sum of their squares is: inf and NaN propagate, and fp32
// squares (< 1.2e77) cannot overflow a double sum of fewer than 1e231 terms. `x <= max` is false for NaN too.
SB_HOST_DEVICE inline bool gradients_finite(double norm_squared) { return norm_squared <= 1.7976931348623157e308; }

// torch._amp_update_scale_: back off and reset the streak on overflow; grow (if the grown scale is finite) and
// reset the streak after growth_interval finite steps. Here the skipped steps are counted too.
SB_HOST_DEVICE inline LossScaleState next_loss_scale(LossScaleState state, bool finite, const LossScaleConfig& config) {
  if (!finite) {
    state.scale *= config.backoff_factor;
    state.growth_tracker = 0;
    ++state.skipped_steps;
    return state;
  }
  const int32_t successful = state.growth_tracker + 1;
  if (successful >= config.growth_interval) {
    const float grown = state.scale * config.growth_factor;
    if (grown <= 3.402823466e38f) state.scale = grown;  // false for inf
    state.growth_tracker = 0;
  } else {
    state.growth_tracker = successful;
  }
  return state;
}

// The optimizer's step count for bias correction: skipped steps never ran (as torch.optim's step counter,
// which GradScaler does not advance on a skipped step), so `step` (from 1, every call) becomes
// step - skipped_steps, counted before this step's update.
SB_HOST_DEVICE inline int64_t applied_optimizer_step(int64_t step, const LossScaleState& state) {
  return step - state.skipped_steps;
}

}  // namespace sb
