// The BERT encoder shared by the BERT-family workloads (bert_base §10, mt_dnn §12 of shared/WORKLOADS.md;
// google-research/bert modeling.py, HF parameter names): word + learned position + token-type embeddings,
// LayerNorm 1e-12, dropout, post-norm layers with a GELU FFN, and the tanh pooler on [CLS].
#pragma once

#include <string>

#include "scalebench/graph_builder.h"
#include "workloads/transformer_layers.h"

namespace sb::workloads {

constexpr double kBertLayerNormEpsilon = 1e-12;

// "<name>.weight" (out, in) and "<name>.bias" (out), as nn.Linear.
TensorId bert_dense(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out);

// LayerNorm over the last dimension with "<name>.weight" and "<name>.bias" (model), epsilon 1e-12.
TensorId bert_layer_norm(GraphBuilder& b, const std::string& name, TensorId x, int64_t model);

struct BertEncoderInputs {
  TensorId ids, types;  // (B, T) int32: word pieces and segment ids
  TensorId positions;   // (T) int32: 0 .. T - 1
  TensorId lengths;     // (B) int32: keys at or past lengths[b] (padding) are masked in attention
};

struct BertEncoderOutput {
  TensorId sequence;         // (B, T, model): the last layer's hidden states
  TensorId word_embeddings;  // (vocab, model): bert_base ties its MLM decoder to it
};

// d.dropout applies to the embeddings and every sublayer output, d.attention_dropout to the probabilities.
BertEncoderOutput bert_encoder(GraphBuilder& b, const TransformerDims& d, int64_t vocab, int64_t layers,
                               int64_t max_positions, const BertEncoderInputs& in);

// tanh(dense("pooler.dense")) of the rows `cls_rows` (B) int32 gathered from `rows` (B * T, model).
TensorId bert_pooler(GraphBuilder& b, TensorId rows, TensorId cls_rows, int64_t model);

}  // namespace sb::workloads
