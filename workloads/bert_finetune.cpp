// bert_finetune: BERT-Base fine-tuned on SQuAD 1.1 at sequence 384 (shared/WORKLOADS.md §11; google-research/bert
// run_squad.py, HF BertForQuestionAnswering): the BERT-Base encoder of workloads/bert_encoder.h, then the QA
// head Linear(768 -> 2) on every position, its two columns as start and end logits (batch, 384), and the span
// loss (mean CE(start) + mean CE(end)) / 2. [choice] The pooler is dropped (unused by the loss, so it would get
// no gradient): 108,893,186 trainable parameters. Dropout 0.1 as BERT; none on the head (HF has none).
#include <algorithm>
#include <random>

#include "scalebench/workload.h"
#include "workloads/bert_encoder.h"

namespace sb::workloads {
namespace {

// run_squad.py max_seq_length; the tiny sequence is shorter than its 16 positions, as 384 is than 512.
constexpr int64_t kTime = 384, kTinyTime = 12;
constexpr int64_t kMaxQuery = 64;  // run_squad.py max_query_length (a third of the tiny sequence)
// [choice] SQuAD 1.1 answers average ~3 words: answer spans of 1 to 8 word pieces.
constexpr int64_t kMaxAnswer = 8;

class BertFinetune final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"bert_finetune", "SQuAD 1.1 fine-tuning, seq 384", "sequences", 48, 108893186,
                                    "google-research/bert run_squad.py BERT-Base (HF BertForQuestionAnswering "
                                    "layout, pooler dropped)", "sequences"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §10/§11 google-research/bert optimization.py: AdamWeightDecay beta (0.9, 0.999), eps 1e-6, weight decay
    // 0.01 (decoupled) and tf.clip_by_global_norm(grads, clip_norm=1.0); lr 1e-4 pre-training (BERT paper),
    // 3e-5 for SQuAD (§11). Two differences from AdamWeightDecay remain: it has no bias correction and it
    // exempts LayerNorm and bias parameters from decay; the flat buffer here decays every parameter.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdamW);
    s.learning_rate = 3e-5f;
    s.epsilon = 1e-6f;
    s.max_grad_norm = 1.0f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const BertDims s = bert_base_dims(scale);
    const int64_t time = scale == WorkloadScale::kFull ? kTime : kTinyTime;
    const BertInputs inputs = bert_inputs(b, batch, time);
    const TensorId start_positions = b.input("start_positions", {batch}, DType::kInt32);
    const TensorId end_positions = b.input("end_positions", {batch}, DType::kInt32);

    const BertEncoder encoder = bert_encoder(b, inputs, s);
    const TensorId logits = bert_dense(b, "qa_outputs", encoder.hidden, s.model, 2);  // (batch, time, 2)
    BuiltWorkload built;
    built.loss = b.span_loss(b.select_column(logits, 0), b.select_column(logits, 1), start_positions, end_positions);
    built.units_per_step = static_cast<double>(batch);
    // WORKLOADS.md §11: 35.33 GMAC per sequence, of which the head is 384 x 768 x 2.
    built.forward_flops_per_unit =
        bert_encoder_forward_flops(s, time) + 2.0 * static_cast<double>(time) * static_cast<double>(s.model) * 2;
    return built;
  }

  // [CLS] question [SEP] document [SEP], padded: the question has 1 .. 64 word pieces, the feature
  // [choice] between half the sequence and all of it (a short paragraph, or a full doc_stride window of a long
  // one); the answer is a span of the document with start <= end.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& input = graph.tensor(graph.find_tensor("input_ids"));
    const int64_t batch = input.shape[0], time = input.shape[1];
    const int64_t vocab = graph.tensor(graph.find_tensor("embeddings.word_embeddings.weight")).shape[0];
    const int64_t max_query = std::min(kMaxQuery, time / 3);
    std::mt19937_64 random;
    auto uniform = [&random](int64_t low, int64_t high) {
      return std::uniform_int_distribution<int64_t>(low, high)(random);
    };
    std::vector<int32_t> ids(batch * time, 0), types(batch * time, 0), lengths(batch), starts(batch), ends(batch);
    for (int64_t s = 0; s < batch; ++s) {
      random = sample_random(seed, first_sample + s);
      const int64_t query = uniform(1, max_query);
      const int64_t length = uniform(std::max(query + 4, time / 2), time);  // >= 1 document token
      fill_sentence_pair(random, vocab, query, length, &ids[s * time], &types[s * time]);
      lengths[s] = static_cast<int32_t>(length);
      const int64_t first = query + 2, last = length - 2;  // the document's tokens
      const int64_t answer = uniform(1, std::min(kMaxAnswer, last - first + 1));
      starts[s] = static_cast<int32_t>(uniform(first, last - answer + 1));
      ends[s] = static_cast<int32_t>(starts[s] + answer - 1);
    }
    write_bert_inputs(graph, write, ids, types, lengths);
    write_input(write, graph, "start_positions", starts);
    write_input(write, graph, "end_positions", ends);
  }
};

}  // namespace

const Workload& bert_finetune() {
  static const BertFinetune kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
