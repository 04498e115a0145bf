// CUDA mean losses over whole tensors (sb::cuda): the same arguments as src/cpu/pixel_losses.h, device pointers,
// a workspace of pixel_loss_workspace_bytes (src/core/ops/pixel_losses.h) and a stream. Inputs in T = float,
// bf16 or fp16, the loss fp32 on the device. The forward pass sums in double over a fixed grid of
// kPixelLossBlocks blocks and adds their partials by a fixed tree (the same bits on every run). The backward
// pass seeds with `seed` times the fp16 loss scale read from `gradient_scale` when it is not null.
// Tests: tests/gpu/test_cuda_pix2pixhd_ops.cpp (suite CudaPixelLosses).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void mse_loss_forward(const T* x, float* loss, int64_t n, float target, void* workspace, cudaStream_t stream);
template <typename T>
void mse_loss_backward(const T* x, T* dx, int64_t n, float target, float seed, cudaStream_t stream,
                       const float* gradient_scale = nullptr);

template <typename T>
void l1_loss_forward(const T* a, const T* b, float* loss, int64_t n, void* workspace, cudaStream_t stream);
// db may be null (a detached target).
template <typename T>
void l1_loss_backward(const T* a, const T* b, T* da, T* db, int64_t n, float seed, cudaStream_t stream,
                      const float* gradient_scale = nullptr);

}  // namespace sb::cuda
