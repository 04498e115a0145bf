// The embedding-rows family's CPU reference (src/core/ops/embedding_rows.h says what the four ops are for);
// sb::cuda::embedding_rows_* takes the same arguments plus a stream. `flags` and `rows` hold `vocab` int32s,
// `late`, `packed`, `dense` and `grad` are (vocab, dim) fp32.
#pragma once

#include <cstdint>

namespace sb::cpu {

// flags[ids[t]] = 1 for every token whose id is not padding_idx; flags is not cleared, so the lookups of one
// table mark one flags array in turn. An id outside [0, vocab) is fatal.
void embedding_rows_mark(const int32_t* ids, int64_t tokens, int32_t* flags, int64_t vocab, int64_t padding_idx);
// rows[0, n) = the v with flags[v] > 0, ascending; rows[n, vocab) = -1. A negative flag is fatal (flags are
// counts of ranks). Returns n.
int64_t embedding_rows_compact(const int32_t* flags, int32_t* rows, int64_t vocab);
// packed[i] = late[rows[i]] where rows[i] >= 0, else zeros.
void embedding_rows_gather(const float* late, const int32_t* rows, float* packed, int64_t vocab, int64_t dim);
// grad = dense (no copy when they are the same buffer), then grad[rows[i]] += packed[i] where rows[i] >= 0. Rows
// are distinct (compact's output), so the adds never collide.
void embedding_rows_scatter_add(const float* dense, const float* packed, const int32_t* rows, float* grad,
                                int64_t vocab, int64_t dim);

}  // namespace sb::cpu
