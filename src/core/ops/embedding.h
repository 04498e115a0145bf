// The embedding family: rows of an fp32 (vocab, dim) table gathered by int32 ids, and the backward scatter-add
// into the table's gradient (rows of padding_idx get none). Kernels: src/cpu/embedding.cpp,
// src/cuda/embedding.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct EmbeddingParams {
  int64_t tokens = 0, dim = 0, vocab = 0;
  int64_t padding_idx = -1;  // negative: none
};
NodeAttributes encode(const EmbeddingParams& params);
EmbeddingParams embedding_params(const Node& node);  // of embedding and embedding_backward

}  // namespace sb
