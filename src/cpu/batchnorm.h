// BatchNorm in training mode over the last (channel) axis of an NHWC tensor viewed as (rows = N·H·W,
// channels), optionally fused with the activation that follows it (ReLU, LeakyReLU): CPU reference
// (sb::cuda::batchnorm_* takes the same arguments plus a workspace and a stream). As torch.nn.BatchNorm2d in
// train(): normalised with the batch mean and the biased batch variance, y = act((x - mean) · invstd · gamma +
// beta) with invstd = 1 / sqrt(var + epsilon); the running statistics move by `momentum` toward the batch mean
// and the *unbiased* batch variance (running = (1 - momentum) running + momentum batch). Statistics in double.
//
// Statistics groups ("ghost batch"): the rows split into `groups` contiguous equal parts, each normalised with
// its own statistics, which is what `groups` data-parallel ranks without SyncBN compute on their slices of one
// batch (the --check reference, src/train/dp_check.cpp). Each group is exactly one call with groups = 1 on its
// slice; dgamma and dbeta are the sums of the groups' (each rounded to fp32 as one rank's would be, then
// summed in group order in double). The running statistics move with group 0 only: they then equal rank 0's,
// the rank whose buffers PyTorch DDP broadcasts; moving them once per group would compound the momentum into a
// state no rank holds. They are state, not parameters: the --check compares parameters only.
// Tests: tests/unit/test_cpu_batchnorm.cpp (suite CpuBatchNorm), tests/unit/test_engine_batchnorm.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// The activation fused after the normalisation. Its derivative is read off the output y (LeakyReLU needs a
// positive slope for that: y and the pre-activation then share their sign); at 0 it is PyTorch's (0 for
// ReLU, the slope for LeakyReLU).
enum class BatchNormActivation { kNone = 0, kRelu = 1, kLeakyRelu = 2 };

// x, y: (rows, channels); gamma, beta, running_mean, running_var: (channels); mean and invstd: (groups,
// channels), saved for the backward pass; running_* are updated in place. groups >= 1 divides rows, and each
// group has >= 2 rows (the unbiased variance).
void batchnorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, int64_t groups,
                       float epsilon, float momentum, BatchNormActivation activation, float slope);

// dy, x, y, dx: (rows, channels); mean, invstd: (groups, channels); the rest (channels). Per group of
// n = rows / groups rows, with dz = dy · act'(y) and xhat = (x - mean) · invstd: dbeta_g = Σ dz,
// dgamma_g = Σ dz · xhat, dx = gamma · invstd · (dz - dbeta_g / n - xhat · dgamma_g / n); dgamma and dbeta
// are the sums over the groups. Outputs are overwritten.
void batchnorm_backward(const float* dy, const float* x, const float* y, const float* gamma, const float* mean,
                        const float* invstd, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        int64_t groups, BatchNormActivation activation, float slope);

}  // namespace sb::cpu
