// mt_dnn: MT-DNN-large, GLUE multi-task refinement (shared/WORKLOADS.md §12; namisan/mt-dnn c8621e0,
// scripts/run_mt_dnn.sh, mt_dnn/matcher.py SANBertNetwork): the BERT-Large encoder and pooler, then one head
// per GLUE task (experiments/glue/glue_task_def.yml): SAN for mnli (3 classes), rte, qqp, qnli, mrpc (2);
// linear on the pooled [CLS] for sst, cola (2) and stsb (1). 371,933,205 trainable parameters.
// Each step trains one task (mt-dnn samples it on the host); the graph is static, so it is built for mnli,
// and the other heads and the pooler, which mnli's SAN head does not read, are declared unused: they stay in
// the model and the all-reduce with zero gradients (PyTorch DDP reduces every parameter every step). The
// pooler is still computed, as BertModel always does. Loss: softmax_cross_entropy over the SAN's log-mean
// scores, i.e. mt-dnn's F.cross_entropy (which renormalises the scores). [CLS] A [SEP] B [SEP] at a fixed
// 128 tokens; dropout 0.1 in the encoder and the SAN head, turn dropout 0.1.
#include <algorithm>
#include <random>

#include "scalebench/workload.h"
#include "workloads/bert_encoder.h"
#include "workloads/san_head.h"

namespace sb::workloads {
namespace {

constexpr double kDropout = kBertDropout;  // the SAN head's dropout_p, as BERT's hidden and attention dropout
constexpr double kTurnDropout = 0.1;  // answer_mem_drop_p

struct Task {
  const char* name;
  int64_t classes;
  bool san;  // enable_san
};
// run_mt_dnn.sh's task list; the step's task is the first.
constexpr Task kTasks[] = {{"mnli", 3, true}, {"rte", 2, true}, {"qqp", 2, true},  {"qnli", 2, true},
                           {"mrpc", 2, true}, {"sst", 2, false}, {"cola", 2, false}, {"stsb", 1, false}};
constexpr size_t kStepTask = 0;

struct Shape {
  BertDims bert;
  int64_t time;
  int64_t hypothesis;  // Lh: positions of segment A the SAN summarises (mt-dnn: the batch's longest A)
};

// Full: BERT-Large (30,522 word pieces, 1,024, 16 heads, 4,096, 24 layers, 512 positions) at 128 tokens;
// tiny: bert_base's tiny encoder.
Shape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Shape{BertDims{30522, 1024, 16, 4096, 24, 512}, 128, 64}
                                       : Shape{bert_base_dims(scale), 16, 8};
}

// Matrix products per sequence of the graph below, in multiply-adds.
double forward_macs_per_sequence(const Shape& s, int64_t classes) {
  const double h = static_cast<double>(s.bert.model), t = static_cast<double>(s.time);
  const double encoder = bert_encoder_forward_flops(s.bert, s.time) / 2;
  const double pooler = h * h;
  const double san = 2 * s.hypothesis * h + kSanTurns * (h * h + 2 * t * h + 4 * h * classes + 6 * h * h);
  return encoder + pooler + san;
}

class MtDnn final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"mt_dnn", "GLUE MTL, mnli SAN, seq 128", "sequences", 8, 371933205,
                                    "namisan/mt-dnn MT-DNN-large (BERT-Large + SAN, 8 GLUE heads)", "sequences"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §12 namisan/mt-dnn train.py: --optimizer adamax, lr 5e-5, --global_grad_clipping 1.0; betas and eps
    // as torch.optim.Adamax's defaults ((0.9, 0.999), 1e-8), no weight decay.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdamax);
    s.learning_rate = 5e-5f;
    s.max_grad_norm = 1.0f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const int64_t model = s.bert.model;
    const BertInputs inputs = bert_inputs(b, batch, s.time);
    const TensorId cls_rows = b.input("cls_rows", {batch}, DType::kInt32);
    const TensorId hypothesis_rows = b.input("hypothesis_rows", {batch, s.hypothesis}, DType::kInt32);
    const TensorId hypothesis_mask = b.input("hypothesis_mask", {batch, s.hypothesis}, DType::kUInt8);
    const TensorId premise_mask = b.input("premise_mask", {batch, s.time}, DType::kUInt8);
    const TensorId labels = b.input("labels", {batch}, DType::kInt32);

    const BertEncoder encoder = bert_encoder(b, inputs, s.bert);
    const TensorId rows = b.reshape(encoder.hidden, {batch * s.time, model});
    b.tanh(bert_dense(b, "pooler.dense", b.embedding(cls_rows, rows), model, model));  // BertModel's pooler
    for (const char* name : {"pooler.dense.weight", "pooler.dense.bias"}) {
      b.declare_unused_parameter(b.graph().find_tensor(name));
    }

    SanHeadParameters step_head{};
    for (size_t task = 0; task < std::size(kTasks); ++task) {
      const std::string prefix = "scoring_list." + std::to_string(task);
      const int64_t classes = kTasks[task].classes;
      if (kTasks[task].san) {
        const SanHeadParameters head = san_head_parameters(b, prefix, model, classes);
        if (task == kStepTask) {
          step_head = head;
        } else {
          declare_san_head_unused(b, head);
        }
      } else {  // nn.Linear(H, classes) on the dropped-out pooled output
        b.declare_unused_parameter(b.parameter(prefix + ".weight", {classes, model}));
        b.declare_unused_parameter(b.parameter(prefix + ".bias", {classes}));
      }
    }
    const TensorId hypothesis = b.embedding(hypothesis_rows, rows);  // M[:, :Lh] (B, Lh, H)
    const TensorId scores = san_head_scores(
        b, step_head, SanHeadInputs{encoder.hidden, hypothesis, hypothesis_mask, premise_mask}, kDropout,
        kTurnDropout);
    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(scores, labels, 0.0, -1);
    built.units_per_step = static_cast<double>(batch);
    built.forward_flops_per_unit = 2 * forward_macs_per_sequence(s, kTasks[kStepTask].classes);
    return built;
  }

  // [CLS] A [SEP] B [SEP] and padding: the length is drawn from [3/4, 1] of the sequence, segment A (with
  // [CLS] and its [SEP]) from [3, Lh] leaving B at least one token. mt-dnn's masks: the hypothesis mask keeps
  // segment A, the premise mask segment B with its [SEP]; labels uniform over mnli's 3 classes.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& input = graph.tensor(graph.find_tensor("input_ids"));
    const int64_t batch = input.shape[0], time = input.shape[1];
    const int64_t hyp = graph.tensor(graph.find_tensor("hypothesis_mask")).shape[1];
    const int64_t vocab = graph.tensor(graph.find_tensor("embeddings.word_embeddings.weight")).shape[0];
    std::vector<int32_t> ids(batch * time, 0), types(batch * time, 0), lengths(batch);
    std::vector<int32_t> cls_rows(batch), hypothesis_rows(batch * hyp), labels(batch);
    std::vector<uint8_t> hypothesis_mask(batch * hyp, 1), premise_mask(batch * time, 1);
    for (int64_t s = 0; s < batch; ++s) {
      std::mt19937_64 random = sample_random(seed, first_sample + s);
      const int64_t length = std::uniform_int_distribution<int64_t>(std::max<int64_t>(5, time * 3 / 4), time)(random);
      const int64_t a_length = std::uniform_int_distribution<int64_t>(3, std::min(hyp, length - 2))(random);
      fill_sentence_pair(random, vocab, a_length - 2, length, &ids[s * time], &types[s * time]);
      for (int64_t t = a_length; t < length; ++t) premise_mask[s * time + t] = 0;
      for (int64_t t = 0; t < a_length; ++t) hypothesis_mask[s * hyp + t] = 0;
      for (int64_t t = 0; t < hyp; ++t) hypothesis_rows[s * hyp + t] = static_cast<int32_t>(s * time + t);
      lengths[s] = static_cast<int32_t>(length);
      cls_rows[s] = static_cast<int32_t>(s * time);
      labels[s] = static_cast<int32_t>(random() % kTasks[kStepTask].classes);
    }
    write_bert_inputs(graph, write, ids, types, lengths);
    write_input(write, graph, "cls_rows", cls_rows);
    write_input(write, graph, "hypothesis_rows", hypothesis_rows);
    write_input(write, graph, "hypothesis_mask", hypothesis_mask);
    write_input(write, graph, "premise_mask", premise_mask);
    write_input(write, graph, "labels", labels);
  }
};

}  // namespace

const Workload& mt_dnn() {
  static const MtDnn kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
