// CPU reference of the greedy-decoding ops (sb::cpu): the pieces of an autoregressive loop that runs on the
// device with no host round trip per token (unsupmt's back-translation, shared/WORKLOADS.md §9). A one-element
// int32 step counter lives in device memory; ops read it to find the current position, so the same nodes run
// once per generated token. None of them has a gradient (generation runs without one). The CUDA device has the
// same names (src/cuda/decode.h). Tests: tests/unit/test_cpu_decode.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// out[r] = the index of the largest x[r, c] (the first one on ties; NaN counts as the largest, as torch.argmax).
void argmax_rows(const float* x, int32_t* out, int64_t rows, int64_t cols);

// dst (outer, time, inner) of `element_bytes`-byte elements: row t = counter[0] + offset of every outer block
// becomes src (outer, inner). A t outside [0, time) writes nothing (the last step of a loop may produce a
// token past the buffer). Writes a key/value cache at the current position, or a generated token.
void write_at_counter(const void* src, void* dst, const int32_t* counter, int64_t outer, int64_t time,
                      int64_t inner, int64_t element_bytes, int64_t offset);

// out[i] = counter[0] + offset for i < n: the current position of every sentence, or the number of keys
// the attention may read (position + 1).
void fill_from_counter(const int32_t* counter, int32_t* out, int64_t n, int64_t offset);

// counter[0] = keep · counter[0] + add (keep 0: a reset to `add`; keep 1, add 1: the next step).
void update_counter(int32_t* counter, int64_t keep, int64_t add);

// Sentence-end bookkeeping of generated ids (rows, time): ids[r, lengths[r] - 1] = eos and every position
// after it = pad; lengths are clamped to [1, time].
void end_sentences(int32_t* ids, const int32_t* lengths, int64_t rows, int64_t time, int32_t eos, int32_t pad);

}  // namespace sb::cpu
