// AdamW over a flat parameter buffer (decoupled weight decay, Loshchilov & Hutter; PyTorch's AdamW update):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)
// One call covers every parameter, because the planner lays parameters and gradients out flat. CPU
// reference; the CUDA version takes the same arguments plus a stream.
#pragma once

#include <cstdint>

#include "scalebench/optimizer.h"

namespace sb::cpu {

// `step` counts from 1 (bias correction).
void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWSettings& settings,
                int64_t step);

}  // namespace sb::cpu
