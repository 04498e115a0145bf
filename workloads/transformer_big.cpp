// transformer_big: fairseq's transformer_wmt_en_de_big (shared/WORKLOADS.md §7): 6+6 post-norm layers,
// d 1024, 16 heads, FFN 4096 ReLU, one 32,768 x 1024 embedding shared by encoder input, decoder input and
// the output projection, scaled by sqrt(d), sinusoidal positions, label-smoothed cross-entropy (0.1) over
// the target tokens, dropout 0.3 (attention 0.1). Proxy batch: 500 sentence pairs x 32 tokens a side.
#include <algorithm>
#include <cmath>
#include <random>

#include "scalebench/workload.h"
#include "src/cpu/positions.h"
#include "workloads/transformer_layers.h"

namespace sb::workloads {
namespace {

constexpr int32_t kPad = 1, kEos = 2, kFirstWord = 4;  // fairseq's dictionary: bos, pad, eos, unk first
constexpr double kSourceMeanLength = 29.5, kTargetMeanLength = 30.6;  // WMT16 en-de, WORKLOADS.md §7

struct Shape {
  int64_t vocab, model, heads, ffn, layers, time;
};

Shape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Shape{32768, 1024, 16, 4096, 6, 32} : Shape{64, 32, 4, 64, 2, 8};
}

class TransformerBig final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"transformer_big", "translation (WMT16 en-de)", "tokens", 500, 209911808,
                                    "fairseq transformer_wmt_en_de_big", "sentence pairs"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §7 fairseq transformer_wmt_en_de_big recipe: --optimizer adam --adam-betas '(0.9, 0.98)' --lr 5e-4
    // (fairseq's adam_eps default 1e-8, weight_decay 0; no --clip-norm in the recipe).
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 5e-4f;
    s.beta2 = 0.98f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const TransformerDims d{batch, s.model, s.heads, s.ffn, 0.3, 0.1};  // transformer_wmt_en_de_big
    const TensorId src = b.input("source", {batch, s.time}, DType::kInt32);
    const TensorId src_positions = b.input("source_positions", {batch, s.time}, DType::kInt32);
    const TensorId src_lengths = b.input("source_lengths", {batch}, DType::kInt32);
    const TensorId tgt = b.input("target_input", {batch, s.time}, DType::kInt32);
    const TensorId tgt_positions = b.input("target_positions", {batch, s.time}, DType::kInt32);
    const TensorId tgt_lengths = b.input("target_lengths", {batch}, DType::kInt32);
    const TensorId targets = b.input("targets", {batch * s.time}, DType::kInt32);
    const TensorId sinusoids = b.input("sinusoidal_positions", {s.time + kPad + 1, s.model});
    const TensorId embed = b.parameter("embed_tokens.weight", {s.vocab, s.model});

    const double embed_scale = std::sqrt(static_cast<double>(s.model));
    auto embed_words = [&](TensorId ids, TensorId positions) {
      return b.dropout(
          b.add(b.scale(b.embedding(ids, embed, kPad), embed_scale), b.embedding(positions, sinusoids, kPad)), d.dropout);
    };
    TensorId x = embed_words(src, src_positions);
    for (int64_t l = 0; l < s.layers; ++l) {
      const std::string p = "encoder.layers." + std::to_string(l);
      x = add_and_norm(b, p + ".self_attn_layer_norm", x,
                       multi_head_attention(b, p + ".self_attn", x, x, d, src_lengths, false), d, 1e-5);
      x = add_and_norm(b, p + ".final_layer_norm", x, feed_forward(b, p, x, d, false), d, 1e-5);
    }
    TensorId y = embed_words(tgt, tgt_positions);
    for (int64_t l = 0; l < s.layers; ++l) {
      const std::string p = "decoder.layers." + std::to_string(l);
      y = add_and_norm(b, p + ".self_attn_layer_norm", y,
                       multi_head_attention(b, p + ".self_attn", y, y, d, tgt_lengths, true), d, 1e-5);
      y = add_and_norm(b, p + ".encoder_attn_layer_norm", y,
                       multi_head_attention(b, p + ".encoder_attn", y, x, d, src_lengths, false), d, 1e-5);
      y = add_and_norm(b, p + ".final_layer_norm", y, feed_forward(b, p, y, d, false), d, 1e-5);
    }
    const TensorId logits = b.linear(y, embed);  // the shared embedding, transposed, no bias
    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(b.reshape(logits, {batch * s.time, s.vocab}), targets, 0.1, kPad);
    // Credited: the non-padding target tokens of the synthesized batch (fairseq's wps); this is the estimate.
    built.units_per_step = static_cast<double>(batch) *
                           (scale == WorkloadScale::kFull ? kTargetMeanLength : static_cast<double>(s.time - 1));
    built.credited_inputs = {"targets"};
    built.credited_padding = kPad;
    return built;
  }

  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& source = graph.tensor(graph.find_tensor("source"));
    const int64_t batch = source.shape[0], time = source.shape[1];
    const int64_t vocab = graph.tensor(graph.find_tensor("embed_tokens.weight")).shape[0];
    const int64_t model = graph.tensor(graph.find_tensor("embed_tokens.weight")).shape[1];
    std::mt19937_64 random;
    const bool full = time == 32;
    auto draw_length = [&](double mean) {
      std::normal_distribution<double> around(full ? mean : time - 1.5, full ? 2.5 : 1.0);
      return static_cast<int32_t>(std::clamp<double>(std::lround(around(random)), 2, static_cast<double>(time)));
    };
    std::uniform_int_distribution<int32_t> word(kFirstWord, static_cast<int32_t>(vocab - 1));
    std::vector<int32_t> src(batch * time, kPad), tgt_in(batch * time, kPad), targets(batch * time, kPad);
    std::vector<int32_t> src_lengths(batch), tgt_lengths(batch);
    for (int64_t s = 0; s < batch; ++s) {
      random = sample_random(seed, first_sample + s);
      src_lengths[s] = draw_length(kSourceMeanLength);
      tgt_lengths[s] = draw_length(kTargetMeanLength);
      for (int32_t t = 0; t < src_lengths[s]; ++t) src[s * time + t] = t + 1 == src_lengths[s] ? kEos : word(random);
      for (int32_t t = 0; t < tgt_lengths[s]; ++t) targets[s * time + t] = t + 1 == tgt_lengths[s] ? kEos : word(random);
      // Teacher forcing: the decoder reads the targets shifted right behind an end-of-sentence marker.
      tgt_in[s * time] = kEos;
      for (int32_t t = 1; t < tgt_lengths[s]; ++t) tgt_in[s * time + t] = targets[s * time + t - 1];
    }
    std::vector<int32_t> src_positions(src.size()), tgt_positions(tgt_in.size());
    cpu::make_positions(src.data(), src_positions.data(), batch, time, kPad);
    cpu::make_positions(tgt_in.data(), tgt_positions.data(), batch, time, kPad);
    std::vector<float> sinusoids((time + kPad + 1) * model);
    cpu::sinusoidal_positions(sinusoids.data(), time + kPad + 1, model, kPad);
    write_input(write, graph, "source", src);
    write_input(write, graph, "source_positions", src_positions);
    write_input(write, graph, "source_lengths", src_lengths);
    write_input(write, graph, "target_input", tgt_in);
    write_input(write, graph, "target_positions", tgt_positions);
    write_input(write, graph, "target_lengths", tgt_lengths);
    write_input(write, graph, "targets", targets);
    write_input(write, graph, "sinusoidal_positions", sinusoids);
  }
};
}  // namespace

const Workload& transformer_big() {
  static const TransformerBig kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
