// Fused softmax cross-entropy with label smoothing and an ignore index on the GPU: the same arguments and
// formulas as sb::cpu::softmax_cross_entropy_* (src/cpu/cross_entropy.h, fairseq's eps / (V - 1) smoothing)
// plus a stream. Every pointer is a device pointer, loss_sum and counted_rows included. logits and dlogits are
// T = float, bf16 or fp16 (src/cuda/element.h), widened to fp32 on load, dlogits rounded once to T; the per-row
// losses, saved_logsumexp and loss_sum are fp32 for either T. One block per row (one thread per row for at
// most 64 classes), a single pass of online softmax (running max and rescaled sum of exp) in fp32; the
// per-row loss formula in fp64. loss_sum and counted_rows come from two more kernels that add the per-row
// losses in a fixed order (fixed chunks, then the chunks), so they are reproducible; their partials take
// cross_entropy_forward_scratch_bytes() of stream scratch (stream_scratch.h). Targets live on the device and
// are not validated on the host: a target that is neither a class nor ignore_index gives that row a NaN loss
// (counted) and a NaN gradient row, so the run's checks see it; nothing outside the logits is ever read. Tests: gpu_tests
// --gtest_filter='CudaCrossEntropy*:CudaBf16CrossEntropy*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cpu/cross_entropy.h"  // sb::cpu::kNoIgnoreIndex, the same value on every device
#include "src/cuda/element.h"

namespace sb::cuda {

using sb::cpu::kNoIgnoreIndex;

// logits (rows, classes); targets, losses, saved_logsumexp (rows); loss_sum (1); counted_rows (1).
template <typename T>
void softmax_cross_entropy_forward(const T* logits, const int32_t* targets, float* losses, float* saved_logsumexp,
                                   float* loss_sum, int64_t* counted_rows, int64_t rows, int64_t classes,
                                   float label_smoothing, int32_t ignore_index, cudaStream_t stream);

// The stream scratch softmax_cross_entropy_forward takes (the executor lends at least this much).
uint64_t cross_entropy_forward_scratch_bytes();

// dlogits = scale * (softmax(logits) - smoothed one-hot), 0 on ignored rows; overwrites dlogits.
// `gradient_scale` (device memory, null: 1) multiplies `scale`: the loss scale S of fp16 training
// (include/scalebench/loss_scale.h), read where it lives so the step needs no host value.
template <typename T>
void softmax_cross_entropy_backward(const T* logits, const int32_t* targets, const float* saved_logsumexp,
                                    T* dlogits, int64_t rows, int64_t classes, float label_smoothing,
                                    int32_t ignore_index, float scale, cudaStream_t stream,
                                    const float* gradient_scale = nullptr);

}  // namespace sb::cuda
