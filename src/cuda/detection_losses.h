// CUDA detection losses (sb::cuda): the same names and arguments as src/cpu/detection_losses.h plus the stream;
// device pointers. x and dx in T = float, bf16 or fp16; targets, weights and the loss fp32. The forward sum is
// deterministic (per-block double partials over a grid fixed by the size, added in order by one block) and
// written to `loss` on the device. The backward seed is `seed` times *loss_scale when that is not null (fp16 loss
// scaling). Tests: tests/gpu/test_cuda_detection_ops.cpp (CudaDetectionLosses).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/cpu/detection_losses.h"
#include "src/cuda/element.h"

namespace sb::cuda {

// The stream scratch a forward pass over `elements` targets takes (the executor reserves it).
size_t detection_loss_scratch_bytes(int64_t elements);

template <typename T>
void bce_with_logits_forward(const T* x, const float* targets, const float* weights, const int32_t* columns,
                             float* loss, const cpu::ClassSelection& s, cudaStream_t stream);
template <typename T>
void smooth_l1_forward(const T* x, const float* targets, const float* weights, const int32_t* columns, float* loss,
                       const cpu::ClassSelection& s, float beta, cudaStream_t stream);

template <typename T>
void bce_with_logits_backward(const T* x, const float* targets, const float* weights, const int32_t* columns, T* dx,
                              const cpu::ClassSelection& s, float seed, cudaStream_t stream,
                              const float* loss_scale = nullptr);
template <typename T>
void smooth_l1_backward(const T* x, const float* targets, const float* weights, const int32_t* columns, T* dx,
                        const cpu::ClassSelection& s, float beta, float seed, cudaStream_t stream,
                        const float* loss_scale = nullptr);

}  // namespace sb::cuda
