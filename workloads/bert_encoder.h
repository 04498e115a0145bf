// BERT-Base's embeddings and encoder stack (shared/WORKLOADS.md §10; google-research/bert modeling.py, HF
// BertModel without its pooler), shared by bert_base (pre-training), bert_finetune (SQuAD) and, with
// BERT-Large's dimensions, mt_dnn (GLUE multi-task): word + learned position + token-type embeddings,
// LayerNorm 1e-12, dropout 0.1, then post-norm layers of multi-head self-attention over the first lengths[b]
// keys and a GELU feed-forward block. Also the [CLS] A [SEP] B [SEP] input layout these workloads synthesise.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "scalebench/workload.h"

namespace sb::workloads {

// google-research/bert's uncased vocabulary: [PAD] 0, [unused], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103;
// real word pieces from 999 on (the tiny vocabulary of 1,100 keeps this layout).
constexpr int32_t kBertCls = 101, kBertSep = 102, kBertMask = 103, kBertFirstWordPiece = 999;
constexpr double kBertLayerNormEpsilon = 1e-12;
constexpr double kBertDropout = 0.1;  // hidden states and attention probabilities

struct BertDims {
  int64_t vocab, model, heads, ffn, layers, max_positions;
};
// Full: BERT-Base (30,522 word pieces, 768, 12 heads, 3,072, 12 layers, 512 positions); tiny: the same graph
// with small dimensions for the CPU device.
BertDims bert_base_dims(WorkloadScale scale);

// The encoder's int32 inputs: "input_ids", "token_type_ids" (batch, time), "position_ids" (time), "lengths"
// (batch: real tokens, the rest is padding that no attention reads).
struct BertInputs {
  TensorId ids, token_types, positions, lengths;
};
BertInputs bert_inputs(GraphBuilder& b, int64_t batch, int64_t time);

struct BertEncoder {
  TensorId hidden;           // (batch, time, model): the last layer's output
  TensorId word_embeddings;  // (vocab, model): the MLM decoder ties to it
};
BertEncoder bert_encoder(GraphBuilder& b, const BertInputs& inputs, const BertDims& dims);

// Linear layer with bias ("<name>.weight" (out, in), "<name>.bias") and LayerNorm ("<name>.weight", "<name>.bias")
// named as HF's BERT modules.
TensorId bert_dense(GraphBuilder& b, const std::string& name, TensorId x, int64_t in, int64_t out);
TensorId bert_layer_norm(GraphBuilder& b, const std::string& name, TensorId x, int64_t model);

// Matrix-product FLOPs (2 per multiply-add) of one sequence through the encoder: the Q, K, V, O and FFN GEMMs
// of every token plus the attention scores and weighted values (time² · model each per layer).
double bert_encoder_forward_flops(const BertDims& dims, int64_t time);

// One row of [CLS] A [SEP] B [SEP] with random word pieces: A has `first_segment` tokens, B fills the row up to
// `length`; token type 0 for [CLS] A [SEP], 1 for B [SEP]. Positions from `length` on are left as they are
// (padding: id 0, type 0).
void fill_sentence_pair(std::mt19937_64& random, int64_t vocab, int64_t first_segment, int64_t length, int32_t* ids,
                        int32_t* token_types);

// Writes the four encoder inputs of a graph built by bert_inputs; position_ids are 0 .. time - 1.
void write_bert_inputs(const Graph& graph, const InputWriter& write, const std::vector<int32_t>& ids,
                       const std::vector<int32_t>& token_types, const std::vector<int32_t>& lengths);

}  // namespace sb::workloads
