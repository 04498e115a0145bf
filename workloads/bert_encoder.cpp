// BERT embeddings, encoder layers and pooler (workloads/bert_encoder.h).
#include "workloads/bert_encoder.h"

namespace sb::workloads {

TensorId bert_dense(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out) {
  return b.linear(x, b.parameter(name + ".weight", {out, in}), b.parameter(name + ".bias", {out}));
}

TensorId bert_layer_norm(GraphBuilder& b, const std::string& name, TensorId x, int64_t model) {
  return b.layernorm(x, b.parameter(name + ".weight", {model}), b.parameter(name + ".bias", {model}),
                     kBertLayerNormEpsilon);
}

BertEncoderOutput bert_encoder(GraphBuilder& b, const TransformerDims& d, int64_t vocab, int64_t layers,
                               int64_t max_positions, const BertEncoderInputs& in) {
  const TensorId words = b.parameter("embeddings.word_embeddings.weight", {vocab, d.model});
  TensorId x = b.add(b.embedding(in.ids, words),
                     b.embedding(in.types, b.parameter("embeddings.token_type_embeddings.weight", {2, d.model})));
  x = b.add_broadcast(x, b.embedding(in.positions, b.parameter("embeddings.position_embeddings.weight",
                                                               {max_positions, d.model})));
  x = b.dropout(bert_layer_norm(b, "embeddings.LayerNorm", x, d.model), d.dropout);
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    x = add_and_norm(b, p + ".attention.output.LayerNorm", x,
                     multi_head_attention(b, p + ".attention", x, x, d, in.lengths, false), d, kBertLayerNormEpsilon);
    x = add_and_norm(b, p + ".output.LayerNorm", x, feed_forward(b, p + ".ffn", x, d, true), d,
                     kBertLayerNormEpsilon);
  }
  return BertEncoderOutput{x, words};
}

TensorId bert_pooler(GraphBuilder& b, TensorId rows, TensorId cls_rows, int64_t model) {
  return b.tanh(bert_dense(b, "pooler.dense", b.embedding(cls_rows, rows), model, model));
}

}  // namespace sb::workloads
