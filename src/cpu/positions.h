// Fixed sinusoidal position table and padding-aware position ids, as fairseq computes them
// (SinusoidalPositionalEmbedding.get_embedding, utils.make_positions) for Transformer Big. The table is a
// constant buffer, not a parameter (fairseq detaches it); look rows up with embedding_forward. BERT's learned
// positions need nothing here: they are an ordinary embedding indexed 0..seq_len-1.
#pragma once

#include <cstdint>

#include "src/cpu/embedding.h"  // kNoPaddingIdx

namespace sb::cpu {

// table: (positions, dim). Row p, column i < half = dim / 2: sin(p * f_i); column half + i: cos(p * f_i), with
// f_i = exp(-i * log(10000) / (half - 1)); an odd dim gets a zero last column; row padding_idx is all zeros
// (kNoPaddingIdx: none). The exponent, f_i and p * f_i are rounded to fp32 where fairseq's fp32 torch code
// rounds them, so large positions match its table rather than the exact sinusoid. Needs dim >= 4 (fairseq
// divides by half - 1) and positions >= padding_idx + 1 + the longest sequence.
void sinusoidal_positions(float* table, int64_t positions, int64_t dim, int64_t padding_idx);

// fairseq's make_positions: tokens, positions: (batch, seq_len). A token equal to padding_idx gets position
// padding_idx; the j-th non-padding token of a row (from 0, whichever side the padding is on) gets
// padding_idx + 1 + j. Requires padding_idx >= 0.
void make_positions(const int32_t* tokens, int32_t* positions, int64_t batch, int64_t seq_len,
                    int64_t padding_idx);

// The same positions for right-padded batches described by lengths: (batch), each in [0, seq_len]:
// t < lengths[b] gets padding_idx + 1 + t, the rest padding_idx. Equal to make_positions on such a batch.
void positions_from_lengths(const int32_t* lengths, int32_t* positions, int64_t batch, int64_t seq_len,
                            int64_t padding_idx);

}  // namespace sb::cpu
