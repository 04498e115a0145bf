// The optimizers over a flat parameter buffer (one call covers every parameter, because the planner lays
// parameters and gradients out flat), as torch.optim defines them, with g = clip * grad, wd = weight decay:
//   adamw:        p *= 1 - lr wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//                 p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//   adam:         g += wd p, then the same without the decoupled decay
//   adamax:       g += wd p;  m = b1 m + (1 - b1) g;  u = max(b2 u, |g| + eps);  p -= lr / (1 - b1^t) * m / u
//   sgd_momentum: g += wd p;  b = momentum b + g;  p -= lr b            (dampening 0; b starts at 0, so b1 = g)
//   nag:          g += wd p;  b = momentum b + g;  p -= lr (g + momentum b)
// Global-norm clipping as torch.nn.utils.clip_grad_norm_: clip = min(1, max_norm / (||grad||_2 + 1e-6)),
// applied inside the update (the gradients are read, never rewritten). CPU reference in double per element,
// rounded once; the CUDA versions (src/cuda/optimizer.h) take the same arguments plus a stream.
#pragma once

#include <cstdint>

#include "scalebench/optimizer.h"
#include "src/core/ops/grad_norm.h"

namespace sb::cpu {

using sb::kGradNormBlocks;  // the scratch's layout (src/core/ops/grad_norm.h)
using sb::kGradNormScratchDoubles;

// scratch[0] = sum of grads[i]^2 in double. `scratch` holds kGradNormScratchDoubles (only [0] is used here).
void grad_norm_squared(const float* grads, int64_t n, double* scratch);

// torch.nn.utils.clip_grad_norm_'s factor for a squared global norm; 1 when max_norm is 0 (no clipping).
double clip_scale(double norm_squared, float max_norm);

// Floats between the starts of two state buffers: n rounded up to 4, so every buffer starts 16-byte aligned.
constexpr int64_t optimizer_state_stride(int64_t n) { return (n + 3) / 4 * 4; }
// Bytes of `buffers` state buffers over n parameters: what an executor allocates for its optimizer (buffers:
// optimizer_state_buffers(kind)).
constexpr uint64_t optimizer_state_bytes(int buffers, int64_t n) {
  return static_cast<uint64_t>(buffers) * static_cast<uint64_t>(optimizer_state_stride(n)) * sizeof(float);
}

// One step of `settings.kind` over n parameters. `state` holds optimizer_state_buffers(kind) buffers, each
// optimizer_state_stride(n) floats (zeroed before step 1): Adam family [m | v] (adamax: [m | u]), SGD momentum
// and NAG [b].
// `step` counts from 1 (bias correction). `grad_norm_squared`: scratch[0] of grad_norm_squared over the same
// gradients, read when settings.max_grad_norm > 0 (may be null otherwise). `state_stride` (0:
// optimizer_state_stride(n)) is the distance between the state buffers, for a slice of a larger flat buffer.
void optimizer_step(float* params, const float* grads, float* state, int64_t n, const OptimizerSettings& settings,
                    int64_t step, const double* grad_norm_squared, int64_t state_stride = 0);

}  // namespace sb::cpu
