// BatchNorm in training mode over the last (channel) axis of an NHWC tensor viewed as (rows = N·H·W,
// channels), optionally fused with the activation that follows it (ReLU, LeakyReLU): CPU reference
// (sb::cuda::batchnorm_* takes the same arguments plus a workspace and a stream). As torch.nn.BatchNorm2d in
// train(): normalised with the batch mean and the biased batch variance, y = act((x - mean) · invstd · gamma +
// beta) with invstd = 1 / sqrt(var + epsilon); the running statistics move by `momentum` toward the batch mean
// and the *unbiased* batch variance (running = (1 - momentum) running + momentum batch). Statistics in double.
// Tests: tests/unit/test_cpu_batchnorm.cpp (suite CpuBatchNorm), tests/unit/test_engine_batchnorm.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// The activation fused after the normalisation. Its derivative is read off the output y (LeakyReLU needs a
// positive slope for that: y and the pre-activation then share their sign); at 0 it is PyTorch's (0 for
// ReLU, the slope for LeakyReLU).
enum class BatchNormActivation { kNone = 0, kRelu = 1, kLeakyRelu = 2 };

// x, y: (rows, channels); gamma, beta, mean, invstd, running_mean, running_var: (channels). mean and invstd
// are saved for the backward pass; running_* are updated in place. rows >= 2 (the unbiased variance).
void batchnorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, float epsilon,
                       float momentum, BatchNormActivation activation, float slope);

// dy, x, y, dx: (rows, channels); the rest (channels). With dz = dy · act'(y) and xhat = (x - mean) · invstd:
// dbeta = Σ dz, dgamma = Σ dz · xhat, dx = gamma · invstd · (dz - dbeta / rows - xhat · dgamma / rows).
// Outputs are overwritten.
void batchnorm_backward(const float* dy, const float* x, const float* y, const float* gamma, const float* mean,
                        const float* invstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        BatchNormActivation activation, float slope);

}  // namespace sb::cpu
