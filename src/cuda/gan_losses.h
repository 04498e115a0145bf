// CUDA GAN losses (sb::cuda): the arguments of src/cpu/gan_losses.h plus the stream, the loss written to device
// memory instead of returned. fp32 device pointers. The softplus loss is one block (one score per sample);
// the squared norm reuses the optimizer's deterministic sum of squares (grad_norm_squared: a fixed 1024-block
// grid, partials in double) over `scratch` (cpu::kGradNormScratchDoubles doubles, the node's workspace).
// Backward passes multiply by *loss_scale when it is given (fp16 dynamic loss scaling; null: 1).
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaGanLosses).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void softplus_loss_forward(const float* scores, float* loss, int64_t n, float sign, cudaStream_t stream);
void softplus_loss_backward(const float* scores, float* dscores, int64_t n, float sign, float weight,
                            cudaStream_t stream, const float* loss_scale = nullptr);
void squared_norm_loss_forward(const float* x, float* loss, int64_t elements, int64_t batch, float scale,
                               double* scratch, cudaStream_t stream);
void squared_norm_loss_backward(const float* x, float* dx, int64_t elements, int64_t batch, float scale,
                                float weight, cudaStream_t stream, const float* loss_scale = nullptr);

}  // namespace sb::cuda
