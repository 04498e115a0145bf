// SQuAD span loss on the GPU: the same names, arguments and semantics as sb::cpu::span_loss_* (src/cpu/
// span_loss.h: HF BertForQuestionAnswering's clamp to [0, seq], ignore_index = seq, (mean CE(start) +
// mean CE(end)) / 2, a side with no kept row contributing 0) plus a stream. Every pointer is a device pointer,
// `loss` included; `dloss` is a host value. T is the logits' element type (float, bf16 or fp16, src/cuda/element.h):
// fp32 math, per-row losses and log-sum-exp stored as float. Unlike the cross-entropy kernels the kept-row
// counts never leave the device, so the step needs no host synchronisation. Tests: gpu_tests
// --gtest_filter='CudaSpanLoss*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// start_logits, end_logits (batch, seq); positions (batch), any int32; row_losses, saved_logsumexp (2, batch),
// start side first; loss (1).
template <typename T>
void span_loss_forward(const T* start_logits, const T* end_logits, const int32_t* start_positions,
                       const int32_t* end_positions, float* row_losses, float* saved_logsumexp, float* loss,
                       int64_t batch, int64_t seq, cudaStream_t stream);

// Overwrites dstart_logits and dend_logits (batch, seq) with the gradients of dloss · loss. `gradient_scale`
// (device memory, null: 1) multiplies dloss: the loss scale S of fp16 training (include/scalebench/loss_scale.h).
template <typename T>
void span_loss_backward(const T* start_logits, const T* end_logits, const int32_t* start_positions,
                        const int32_t* end_positions, const float* saved_logsumexp, T* dstart_logits,
                        T* dend_logits, int64_t batch, int64_t seq, float dloss, cudaStream_t stream,
                        const float* gradient_scale = nullptr);

}  // namespace sb::cuda
