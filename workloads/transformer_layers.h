// Building blocks shared by the transformer-family workloads (fairseq Transformer, BERT): multi-head
// attention, the feed-forward block and post-LayerNorm residual layers, as GraphBuilder calls.
#pragma once

#include <string>

#include "scalebench/graph_builder.h"

namespace sb::workloads {

struct TransformerDims {
  int64_t batch, model, heads, ffn;
  double dropout = 0;            // on every sublayer's output before its residual add
  double attention_dropout = 0;  // on the attention probabilities
};

// Q from `query` (B, Tq, D), K and V from `memory` (B, Tk, D); keys at or past key_lengths[b] masked;
// causal masks future keys. Q, K, V, O projections D -> D with bias ("<prefix>.q.weight", ...).
TensorId multi_head_attention(GraphBuilder& b, const std::string& prefix, TensorId query, TensorId memory,
                              const TransformerDims& dims, TensorId key_lengths, bool causal);

// W2 · act(W1 · x + b1) + b2 with W1 D -> ffn, W2 ffn -> D; gelu (BERT) or relu (fairseq).
TensorId feed_forward(GraphBuilder& b, const std::string& prefix, TensorId x, const TransformerDims& dims, bool gelu);

// LayerNorm(x + dropout(sublayer)) ("<prefix>.weight", "<prefix>.bias"): the post-norm residual of both
// references, with dims.dropout on the sublayer's output as both apply it.
TensorId add_and_norm(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId sublayer,
                      const TransformerDims& dims, double epsilon);

}  // namespace sb::workloads
