// Optimizer settings shared by the executors and the trainer. AdamW as PyTorch defines it (decoupled weight
// decay); the kernels live in src/cpu/optimizer.h and src/cuda/optimizer.h.
#pragma once

namespace sb {

struct AdamWSettings {
  float learning_rate = 1e-4f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, weight_decay = 0.01f;
};

}  // namespace sb
