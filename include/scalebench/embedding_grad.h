// --embedding-grad: how a tied embedding table's gradient is reduced (issue 26; src/core/ops/embedding_rows.h).
#pragma once

#include <cstdint>
#include <string>

namespace sb {

// sparse: a tied table's dense part reduced as soon as it is written, its lookups' rows apart after the backward
// pass, at most min(table rows, ranks x ids) of them (a fixed count, so that the step can be captured); dense: the
// whole gradient after its last node, as PyTorch DDP does; auto: sparse for a table where that bound is at most
// half its rows (where the late half crosses the wire at most half as large), dense elsewhere.
enum class EmbeddingGradMode { kAuto, kSparse, kDense };
const char* embedding_grad_mode_name(EmbeddingGradMode mode);  // "auto", "sparse", "dense"

// Why `ranks` ranks reducing a tied table of `rows` rows, whose lookups read `ids` ids per rank, under `mode`
// (with or without `overlap`) do not reduce its lookups' rows apart; "" where they do. dense is dense; auto on one
// rank reduces nothing (sparse there is a test's choice); --no-overlap reduces every bucket after the backward
// pass; auto refuses where min(rows, ranks x ids) is above half the rows; `gradients_in_blocks` (zero2 and zero3,
// PlanOptions::gradient_blocks) keep a bucket's gradients only until its reduce-scatter, before the rows could be
// added. The graph splits a table's gradient (autodiff) exactly where this is "", so that a job that reduces it whole
// pays nothing for the split (src/train/replica.h).
std::string rows_apart_refusal(EmbeddingGradMode mode, int ranks, bool overlap, int64_t rows, int64_t ids,
                               bool gradients_in_blocks = false);

}  // namespace sb
