// bert_base: BERT-Base pre-training, MLM + NSP at sequence 128 (shared/WORKLOADS.md §10; google-research/bert
// modeling.py and run_pretraining.py): the BERT-Base encoder of workloads/bert_encoder.h (embeddings,
// 12 post-norm layers of 768, 12 heads, FFN 3072 GELU), tanh pooler on [CLS]; the MLM head runs on the 20
// masked positions only (gathered before the vocabulary GEMM, as google's gather_indexes) with its decoder
// tied to the word embeddings plus an output bias; NSP is a 2-way classifier on the pooled output; the loss
// is their sum. Dropout 0.1 on hidden states and attention probabilities.
#include <algorithm>
#include <random>

#include "scalebench/workload.h"
#include "workloads/bert_encoder.h"

namespace sb::workloads {
namespace {

constexpr int64_t kTime = 128, kTinyTime = 16;              // tokens per sequence
constexpr int64_t kPredictions = 20, kTinyPredictions = 3;  // masked positions per sequence (google's 20 at 128)

class BertBase final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"bert_base", "pre-training MLM+NSP, seq 128", "sequences", 128, 110106428,
                                    "google-research/bert BERT-Base (HF BertForPreTraining layout)", "sequences"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §10/§11 google-research/bert optimization.py: AdamWeightDecay beta (0.9, 0.999), eps 1e-6, weight decay
    // 0.01 (decoupled) and tf.clip_by_global_norm(grads, clip_norm=1.0); lr 1e-4 pre-training (BERT paper),
    // 3e-5 for SQuAD (§11). Two differences from AdamWeightDecay remain: it has no bias correction and it
    // exempts LayerNorm and bias parameters from decay; the flat buffer here decays every parameter.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdamW);
    s.learning_rate = 1e-4f;
    s.epsilon = 1e-6f;
    s.max_grad_norm = 1.0f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const BertDims s = bert_base_dims(scale);
    const bool full = scale == WorkloadScale::kFull;
    const int64_t time = full ? kTime : kTinyTime, predictions = full ? kPredictions : kTinyPredictions;
    const BertInputs inputs = bert_inputs(b, batch, time);
    const TensorId masked_rows = b.input("masked_rows", {batch * predictions}, DType::kInt32);
    const TensorId masked_labels = b.input("masked_labels", {batch * predictions}, DType::kInt32);
    const TensorId cls_rows = b.input("cls_rows", {batch}, DType::kInt32);
    const TensorId nsp_labels = b.input("next_sentence_labels", {batch}, DType::kInt32);

    const BertEncoder encoder = bert_encoder(b, inputs, s);
    const TensorId rows = b.reshape(encoder.hidden, {batch * time, s.model});
    const TensorId pooled = b.tanh(bert_dense(b, "pooler.dense", b.embedding(cls_rows, rows), s.model, s.model));

    TensorId h =
        b.gelu(bert_dense(b, "cls.predictions.transform.dense", b.embedding(masked_rows, rows), s.model, s.model));
    h = bert_layer_norm(b, "cls.predictions.transform.LayerNorm", h, s.model);
    const TensorId mlm_logits = b.linear(h, encoder.word_embeddings, b.parameter("cls.predictions.bias", {s.vocab}));
    const TensorId nsp_logits = bert_dense(b, "cls.seq_relationship", pooled, s.model, 2);
    BuiltWorkload built;
    built.loss = b.add_losses(b.softmax_cross_entropy(mlm_logits, masked_labels, 0.0, -1),
                              b.softmax_cross_entropy(nsp_logits, nsp_labels, 0.0, -1));
    built.units_per_step = static_cast<double>(batch);
    return built;
  }

  // [CLS] A [SEP] B [SEP] with the two segments' lengths drawn at random, padding after; 15% of the real
  // tokens (up to the prediction count) are chosen for MLM and replaced by [MASK].
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& input = graph.tensor(graph.find_tensor("input_ids"));
    const int64_t batch = input.shape[0], time = input.shape[1];
    const int64_t predictions = graph.tensor(graph.find_tensor("masked_rows")).shape[0] / batch;
    const int64_t vocab = graph.tensor(graph.find_tensor("embeddings.word_embeddings.weight")).shape[0];
    std::vector<int32_t> ids(batch * time, 0), types(batch * time, 0), lengths(batch), masked_rows, masked_labels;
    std::vector<int32_t> cls_rows(batch), nsp(batch);
    for (int64_t s = 0; s < batch; ++s) {
      std::mt19937_64 random = sample_random(seed, first_sample + s);
      const int64_t length = std::uniform_int_distribution<int64_t>(std::max<int64_t>(predictions + 3, time * 3 / 4), time)(random);
      const int64_t first = std::uniform_int_distribution<int64_t>(1, length - 3)(random);  // segment A tokens
      int32_t* row = &ids[s * time];
      fill_sentence_pair(random, vocab, first, length, row, &types[s * time]);
      lengths[s] = static_cast<int32_t>(length);
      cls_rows[s] = static_cast<int32_t>(s * time);
      nsp[s] = static_cast<int32_t>(random() % 2);
      std::vector<int64_t> candidates;
      for (int64_t t = 1; t < length; ++t) {
        if (row[t] != kBertSep) candidates.push_back(t);
      }
      std::shuffle(candidates.begin(), candidates.end(), random);
      for (int64_t k = 0; k < predictions; ++k) {
        const int64_t t = candidates[static_cast<size_t>(k)];
        masked_rows.push_back(static_cast<int32_t>(s * time + t));
        masked_labels.push_back(row[t]);
        row[t] = kBertMask;
      }
    }
    write_bert_inputs(graph, write, ids, types, lengths);
    write_input(write, graph, "masked_rows", masked_rows);
    write_input(write, graph, "masked_labels", masked_labels);
    write_input(write, graph, "cls_rows", cls_rows);
    write_input(write, graph, "next_sentence_labels", nsp);
  }
};

}  // namespace

const Workload& bert_base() {
  static const BertBase kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
