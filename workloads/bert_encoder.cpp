// BERT-Base embeddings and encoder (workloads/bert_encoder.h).
#include "workloads/bert_encoder.h"

#include "workloads/transformer_layers.h"

namespace sb::workloads {

BertDims bert_base_dims(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? BertDims{30522, 768, 12, 3072, 12, 512} : BertDims{1100, 32, 4, 64, 2, 16};
}

BertInputs bert_inputs(GraphBuilder& b, int64_t batch, int64_t time) {
  BertInputs in;
  in.ids = b.input("input_ids", {batch, time}, DType::kInt32);
  in.token_types = b.input("token_type_ids", {batch, time}, DType::kInt32);
  in.positions = b.input("position_ids", {time}, DType::kInt32);
  in.lengths = b.input("lengths", {batch}, DType::kInt32);
  return in;
}

TensorId bert_dense(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out) {
  return b.linear(x, b.parameter(name + ".weight", {out, in}), b.parameter(name + ".bias", {out}));
}

TensorId bert_layer_norm(GraphBuilder& b, const std::string& name, TensorId x, int64_t model) {
  return b.layernorm(x, b.parameter(name + ".weight", {model}), b.parameter(name + ".bias", {model}),
                     kBertLayerNormEpsilon);
}

BertEncoder bert_encoder(GraphBuilder& b, const BertInputs& in, const BertDims& s) {
  const int64_t batch = b.graph().tensor(in.ids).shape[0];
  const TransformerDims d{batch, s.model, s.heads, s.ffn, kBertDropout, kBertDropout};
  BertEncoder out;
  out.word_embeddings = b.parameter("embeddings.word_embeddings.weight", {s.vocab, s.model});
  TensorId x = b.add(b.embedding(in.ids, out.word_embeddings),
                     b.embedding(in.token_types, b.parameter("embeddings.token_type_embeddings.weight", {2, s.model})));
  // The positions table is added to every sequence of the batch: (time, model) broadcast over batch.
  x = b.add_broadcast(x, b.embedding(in.positions, b.parameter("embeddings.position_embeddings.weight",
                                                               {s.max_positions, s.model})));
  x = b.dropout(bert_layer_norm(b, "embeddings.LayerNorm", x, s.model), d.dropout);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    x = add_and_norm(b, p + ".attention.output.LayerNorm", x,
                     multi_head_attention(b, p + ".attention", x, x, d, in.lengths, false), d, kBertLayerNormEpsilon);
    x = add_and_norm(b, p + ".output.LayerNorm", x, feed_forward(b, p + ".ffn", x, d, true), d, kBertLayerNormEpsilon);
  }
  out.hidden = x;
  return out;
}

double bert_encoder_forward_flops(const BertDims& s, int64_t time) {
  const double model = static_cast<double>(s.model), t = static_cast<double>(time);
  const double per_token = 4 * model * model + 2 * model * static_cast<double>(s.ffn);  // Q, K, V, O; FFN in, out
  const double attention = 2 * t * t * model;                                           // Q·Kᵀ and P·V
  return 2.0 * static_cast<double>(s.layers) * (t * per_token + attention);
}

void fill_sentence_pair(std::mt19937_64& random, int64_t vocab, int64_t first_segment, int64_t length, int32_t* ids,
                        int32_t* token_types) {
  std::uniform_int_distribution<int32_t> word(kBertFirstWordPiece, static_cast<int32_t>(vocab - 1));
  ids[0] = kBertCls;
  for (int64_t t = 1; t < length; ++t) ids[t] = word(random);
  ids[first_segment + 1] = kBertSep;
  ids[length - 1] = kBertSep;
  for (int64_t t = first_segment + 2; t < length; ++t) token_types[t] = 1;
}

void write_bert_inputs(const Graph& graph, const InputWriter& write, const std::vector<int32_t>& ids,
                       const std::vector<int32_t>& token_types, const std::vector<int32_t>& lengths) {
  const int64_t time = graph.tensor(graph.find_tensor("position_ids")).shape[0];
  std::vector<int32_t> positions(static_cast<size_t>(time));
  for (int64_t t = 0; t < time; ++t) positions[t] = static_cast<int32_t>(t);
  write_input(write, graph, "input_ids", ids);
  write_input(write, graph, "token_type_ids", token_types);
  write_input(write, graph, "position_ids", positions);
  write_input(write, graph, "lengths", lengths);
}

}  // namespace sb::workloads
