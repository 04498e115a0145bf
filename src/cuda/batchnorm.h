// BatchNorm (training mode) fused with its activation on the GPU: the same arguments as sb::cpu::batchnorm_*
// (src/cpu/batchnorm.h) plus the partial-sum workspace (src/core/ops/batchnorm.h) and a stream; device
// pointers. x, y, dy, dx are T = float, bf16 or fp16; gamma, beta, their gradients, mean, invstd and the
// running statistics are fp32. Three kernels per pass: fp32 partial sums per (chunk of rows, channel) — the
// forward shifts every value by the channel's first element so that the variance does not cancel — then one
// thread per channel combining the chunks in order in double, then an elementwise pass. Deterministic.
// Statistics groups (src/cpu/batchnorm.h): the three kernels run once per group on its slice of rows (running
// statistics from group 0 only); the backward pass keeps each group's dgamma and dbeta in the workspace and
// one more kernel sums them over the groups in order in double.
// Tests: tests/gpu/test_cuda_batchnorm.cpp (suite CudaBatchNorm).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cpu/batchnorm.h"
#include "src/cuda/element.h"

namespace sb::cuda {

// workspace: batchnorm_workspace_bytes(rows, channels, groups) bytes; mean and invstd (groups, channels).
template <typename T>
void batchnorm_forward(const T* x, const float* gamma, const float* beta, T* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, int64_t groups,
                       float epsilon, float momentum, cpu::BatchNormActivation activation, float slope,
                       float* workspace, cudaStream_t stream);

template <typename T>
void batchnorm_backward(const T* dy, const T* x, const T* y, const float* gamma, const float* mean,
                        const float* invstd, T* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        int64_t groups, cpu::BatchNormActivation activation, float slope, float* workspace,
                        cudaStream_t stream);

}  // namespace sb::cuda
