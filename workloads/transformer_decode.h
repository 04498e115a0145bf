// Incremental (one token at a time) attention for a greedy decode loop built into a training graph: the
// generation pass of unsupmt (XLM's generate with its key/value cache). The same parameter names as
// workloads/transformer_layers.h's multi_head_attention, so the decode step shares the training pass's weights
// (GraphBuilder::parameter returns a name it has seen). Shapes: B sentences, D = heads · dh, a cache of T
// positions; the current position is the graph's step counter (src/cpu/decode.h).
#pragma once

#include <string>

#include "workloads/transformer_layers.h"

namespace sb::workloads {

// Causal self-attention of the current token x (B, 1, D): its key and value projections are written into the
// caches (B, heads, T, dh) at position counter[0], and the query attends to the `key_count` (B, int32: position
// + 1) first cached positions. Returns the output projection (B, 1, D).
TensorId cached_self_attention(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId cache_k,
                               TensorId cache_v, TensorId counter, TensorId key_count, const TransformerDims& dims);

// Keys and values of the cross-attention over `memory` (B, S, D), split into heads (B, heads, S, dh): computed once
// per generation, read at every step.
std::pair<TensorId, TensorId> cross_attention_memory(GraphBuilder& b, const std::string& prefix, TensorId memory,
                                                     const TransformerDims& dims);

// Cross-attention of x (B, 1, D) over precomputed keys and values (B, heads, S, dh), keys at or past
// memory_lengths[b] masked. Returns the output projection (B, 1, D).
TensorId cached_cross_attention(GraphBuilder& b, const std::string& prefix, TensorId x, TensorId keys,
                                TensorId values, TensorId memory_lengths, const TransformerDims& dims);

// Casts, once, every weight and bias a decoder layer's step reads by matrix product (self-attention q, k, v, out;
// cross-attention q, out; fc1, fc2) into the compute dtype, so that the casts run before a decode loop and
// not at every token (PyTorch autocast keeps its casts for the whole generation likewise). Nothing in fp32.
void cast_decoder_layer_weights(GraphBuilder& b, const std::string& self_prefix, const std::string& cross_prefix,
                                const std::string& ffn_prefix, const TransformerDims& dims);

}  // namespace sb::workloads
