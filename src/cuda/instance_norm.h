// CUDA instance normalisation without affine parameters (sb::cuda): the same arguments as src/cpu/instance_norm.h
// plus a workspace of instance_norm_workspace_bytes (src/core/ops/instance_norm.h) and a stream; device
// pointers; x, y, dy, dx in T = float, bf16 or fp16, mean and invstd fp32. Statistics: each block reduces a chunk
// of one sample's pixels for every channel (threads across channels, so NHWC rows are read coalesced) in double
// into the workspace, one block per (sample, channel) then adds the chunks in a fixed tree order: deterministic,
// no atomics. The forward sums are shifted by each (sample, channel)'s first pixel so that E[x²] − E[x]² does not
// cancel when the mean is large next to the spread. Tests: tests/gpu/test_cuda_pix2pixhd_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void instance_norm_forward(const T* x, T* y, float* mean, float* invstd, int64_t batch, int64_t pixels,
                           int64_t channels, float epsilon, void* workspace, cudaStream_t stream);

template <typename T>
void instance_norm_backward(const T* dy, const T* x, const float* mean, const float* invstd, T* dx, int64_t batch,
                            int64_t pixels, int64_t channels, void* workspace, cudaStream_t stream);

}  // namespace sb::cuda
