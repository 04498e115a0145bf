// --embedding-grad's names and its one decision (include/scalebench/embedding_grad.h): where the rows of a tied
// table are reduced apart. The graph (autodiff's split) and the gradient reducer both follow it.
#include "scalebench/embedding_grad.h"

#include <algorithm>

namespace sb {

const char* embedding_grad_mode_name(EmbeddingGradMode mode) {
  switch (mode) {
    case EmbeddingGradMode::kSparse: return "sparse";
    case EmbeddingGradMode::kDense: return "dense";
    case EmbeddingGradMode::kAuto: break;
  }
  return "auto";
}

std::string rows_apart_refusal(EmbeddingGradMode mode, int ranks, bool overlap, int64_t rows, int64_t ids,
                               bool gradients_in_blocks) {
  if (mode == EmbeddingGradMode::kDense) return "--embedding-grad dense";
  if (mode == EmbeddingGradMode::kAuto && ranks < 2) return "one rank reduces nothing";
  if (!overlap) return "--no-overlap reduces every bucket after the backward pass";
  if (gradients_in_blocks) {
    return "the sharded strategy plans each bucket's gradients to live only until its reduce-scatter, before the rows "
           "would be added";
  }
  // auto: only where the packed rows are at most half the table; the bound is what a captured step can send.
  const int64_t bound = std::min<int64_t>(rows, static_cast<int64_t>(ranks) * ids);
  if (mode == EmbeddingGradMode::kAuto && 2 * bound > rows) {
    return "ranks x the lookups' ids = " + std::to_string(static_cast<int64_t>(ranks) * ids) +
           " could touch more than half of the " + std::to_string(rows) + " rows";
  }
  return "";
}

}  // namespace sb
