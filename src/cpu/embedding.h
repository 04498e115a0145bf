// Embedding lookup (gather) and its gradient (scatter-add), CPU reference; sb::cuda::embedding_* takes the
// same arguments plus a stream. Used for word, learned-position (BERT) and token-type embeddings, and with a
// sinusoidal table (positions.h) for fairseq's fixed positions. An id outside [0, vocab) is fatal, never
// clamped or skipped: a silent wrong row would train on garbage.
#pragma once

#include <cstdint>

namespace sb::cpu {

// padding_idx value meaning "every row receives gradient".
constexpr int64_t kNoPaddingIdx = -1;

// ids: (tokens); table: (vocab, dim); out: (tokens, dim), out[t] = table[ids[t]].
void embedding_forward(const int32_t* ids, const float* table, float* out, int64_t tokens, int64_t dim,
                       int64_t vocab);

// dtable[ids[t]] += dout[t] for every token; dtable is NOT cleared, so every use of a tied table (fairseq's
// shared encoder/decoder/output embedding, BERT's word embedding and MLM decoder) adds into one gradient.
// Repeated ids sum, in fp64 per row before the single fp32 add. padding_idx as torch.nn.Embedding's (fairseq,
// HF BERT): that row gets no gradient from this lookup (other uses, e.g. the output GEMM, still update it);
// kNoPaddingIdx for none.
void embedding_backward_accumulate(const int32_t* ids, const float* dout, float* dtable, int64_t tokens,
                                   int64_t dim, int64_t vocab, int64_t padding_idx);

}  // namespace sb::cpu
