// Fused masked softmax of attention scores on the GPU: the same arguments and contract as
// sb::cpu::masked_softmax_* (src/cpu/softmax.h) plus a stream; scores/probs/dprobs/dscores and key_lengths are
// device pointers (key_lengths may be nullptr). scores, probs, dprobs and dscores are T = float, bf16 or fp16
// (src/cuda/element.h): loaded as T, max / sum / dot in fp32, each output rounded once to T. Masked keys get
// exactly 0, and a row with every key masked is all zeros. Lengths are not validated on the host (they live on
// the device): the kernels clamp each to [0, k_len], so a bad length never reads or writes out of bounds.
// Tests: gpu_tests --gtest_filter='CudaSoftmax*:CudaBf16Softmax*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// scores, probs: (batch, heads, q_len, k_len); key_lengths: (batch) or nullptr; causal masks k > q.
template <typename T>
void masked_softmax_forward(const T* scores, T* probs, int64_t batch, int64_t heads, int64_t q_len, int64_t k_len,
                            float scale, const int32_t* key_lengths, bool causal, cudaStream_t stream);

// dscores = scale * probs * (dprobs - sum_k probs * dprobs) on valid keys, exactly 0 on masked ones.
template <typename T>
void masked_softmax_backward(const T* probs, const T* dprobs, T* dscores, int64_t batch, int64_t heads,
                             int64_t q_len, int64_t k_len, float scale, const int32_t* key_lengths, bool causal,
                             cudaStream_t stream);

}  // namespace sb::cuda
