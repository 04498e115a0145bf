// The YOLOv3 loss on the GPU: the same definition and arguments as src/cpu/yolo_loss.h plus a workspace
// (yolo_loss_workspace_bytes) and a stream; heads and their gradients are T = float, bf16 or fp16, the ground
// truth and the loss fp32. Kernels: the slot map (one thread per ground-truth box; atomicMax keeps the
// highest box index per slot — the CPU's "later box wins"), one thread per prediction for its loss terms or
// its 5 + C gradients (IoU against the image's boxes for the ignore mask), and one block summing the
// per-prediction losses in a fixed order in double (deterministic). `gradient_scale` (device, null: 1)
// multiplies the seed: the loss scale of fp16 training. Tests: tests/gpu/test_cuda_losses.cpp (CudaYoloLoss).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cpu/yolo_loss.h"
#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void yolo_loss_forward(const T* head0, const T* head1, const T* head2, const float* truth, float* loss,
                       const cpu::YoloGeometry& g, void* workspace, cudaStream_t stream);

template <typename T>
void yolo_loss_backward(const T* head0, const T* head1, const T* head2, const float* truth, T* dhead0, T* dhead1,
                        T* dhead2, const cpu::YoloGeometry& g, float seed, void* workspace, cudaStream_t stream,
                        const float* gradient_scale = nullptr);

}  // namespace sb::cuda
