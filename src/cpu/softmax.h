// Fused masked softmax of attention scores, CPU reference (sb::cuda::masked_softmax_* takes the same arguments
// plus a stream). Scores are (batch, heads, q_len, k_len) contiguous; probs = softmax over k of scale * scores.
// Masking is by key padding (k >= key_lengths[b], right padding) and, when causal, by the future (k > q).
// Masked keys get probability exactly 0, as fairseq's -inf fill does and as BERT's additive -10000 does in fp32.
#pragma once

#include <cstdint>

namespace sb::cpu {

// key_lengths: (batch) valid keys per sequence in [0, k_len], nullptr for no padding. causal masks k > q
// (q and k counted from 0; training self-attention has q_len == k_len).
// A row with every key masked (only possible when key_lengths[b] == 0) is all zeros rather than fairseq's NaN,
// so that an empty sequence contributes nothing instead of poisoning the step.
void masked_softmax_forward(const float* scores, float* probs, int64_t batch, int64_t heads, int64_t q_len,
                            int64_t k_len, float scale, const int32_t* key_lengths, bool causal);

// dscores = scale * probs * (dprobs - sum_k probs * dprobs), row by row; masked positions get exactly 0
// whatever dprobs holds there. dscores is overwritten. Shapes and mask arguments as in the forward pass.
void masked_softmax_backward(const float* probs, const float* dprobs, float* dscores, int64_t batch,
                             int64_t heads, int64_t q_len, int64_t k_len, float scale, const int32_t* key_lengths,
                             bool causal);

}  // namespace sb::cpu
