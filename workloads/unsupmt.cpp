// unsupmt: XLM's unsupervised NMT en-de (shared/WORKLOADS.md §9): separate encoder and decoder TransformerModels,
// 6 layers each, d 1024, 8 heads, FFN 4096 GELU, post-LN with eps 1e-12, learned positions (512) and language
// embeddings, the decoder's PredLayer tied to its embeddings (its bias separate; the encoder's own PredLayer
// bias is never used in MT). One step = XLM train.py's four sub-steps, each with its own optimizer step and
// gradient reduction: AE(en), AE(de) (noised x -> x), BT(en-de-en), BT(de-en-de): a greedy generation of the
// other language without gradients, on the device with a key/value cache, then enc(generated) -> dec
// reconstructs the original. Proxy batch: 275 sentences of 29 tokens (27 BPE + 2 delimiters) per sub-step.
#include <algorithm>
#include <numeric>
#include <random>

#include "scalebench/workload.h"
#include "workloads/transformer_decode.h"
#include "workloads/transformer_layers.h"

namespace sb::workloads {
namespace {

// XLM's dictionary: <s> 0, </s> 1, <pad> 2, <unk> 3, <special0..9> 4..13 with the mask word <special1>; both
// sentence delimiters are </s>.
constexpr int32_t kEos = 1, kPad = 2, kMask = 5, kFirstWord = 14;
constexpr double kLayerNormEpsilon = 1e-12;
constexpr double kWordShuffle = 3, kWordDropout = 0.1, kWordBlank = 0.1;  // XLM's README for UNMT
const char* const kLanguages[2] = {"en", "de"};

struct Shape {
  int64_t vocab, model, heads, ffn, layers, time, positions;
};

Shape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Shape{64699, 1024, 8, 4096, 6, 29, 512} : Shape{64, 32, 4, 128, 2, 8, 16};
}

// The tensors one sub-step switches: a model input (words, their language, lengths) and, for training, targets.
struct Side {
  TensorId words, language, lengths;
};

class Unsupmt final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"unsupmt", "unsupervised MT (XLM en-de, AE + BT)",
                                    "words", 275, 310047094, "facebookresearch/XLM unsupervised MT", "sentences"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
    // §9 facebookresearch/XLM README (unsupervised MT): --optimizer adam_inverse_sqrt,beta1=0.9,beta2=0.98,lr=0.0001
    // (xlm/optim.py AdamInverseSqrtWithWarmup: eps 1e-8, weight decay 0, warmup 4000 from 1e-7). One optimizer over
    // encoder and decoder, stepped after every sub-step. The schedule is not modelled (no engine schedules yet):
    // the rate is the peak 1e-4; the warm-up's rate changes the update's size, not its cost.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 1e-4f;
    s.beta2 = 0.98f;
    return s;
  }

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const int64_t T = s.time;
    const TransformerDims d{batch, s.model, s.heads, s.ffn, 0.1, 0.1};
    auto ids = [&](const std::string& name, std::vector<int64_t> shape) { return b.input(name, shape, DType::kInt32); };

    // The training pass's inputs, switched by each sub-step's first part, and the constants they come from.
    const Side source{ids("source", {batch, T}), ids("source_language", {batch, T}), ids("source_lengths", {batch})};
    const Side target{ids("target_input", {batch, T}), ids("target_language", {batch, T}),
                      ids("target_lengths", {batch})};
    const TensorId targets = ids("targets", {batch * T});
    const TensorId positions = ids("positions", {batch, T});
    TensorId sentences[2], lengths[2], noised[2], noised_lengths[2], shifted[2], language[2], step_language[2];
    for (int l = 0; l < 2; ++l) {
      const std::string p = kLanguages[l];
      sentences[l] = ids(p + ".sentences", {batch, T});
      lengths[l] = ids(p + ".lengths", {batch});
      noised[l] = ids(p + ".noised", {batch, T});
      noised_lengths[l] = ids(p + ".noised_lengths", {batch});
      shifted[l] = ids(p + ".targets", {batch * T});
      language[l] = ids(p + ".language_ids", {batch, T});
      step_language[l] = ids(p + ".step_language_ids", {batch, 1});
    }
    const Side generation_source{ids("generation.source", {batch, T}), ids("generation.source_language", {batch, T}),
                                 ids("generation.source_lengths", {batch})};
    const TensorId generation_language = ids("generation.target_language", {batch, 1});
    const TensorId start_token = ids("generation.start_token", {batch});
    const TensorId start_ids = ids("generation.start_ids", {batch, T});

    auto part = [&](const std::string& name, bool generation, int64_t repeat, const std::function<void()>& nodes) {
      StepPart p{name, b.graph().nodes().size(), 0, repeat, generation};
      nodes();
      p.end = b.graph().nodes().size();
      return p;
    };
    auto select = [&](const Side& to, const Side& from) {
      b.copy(to.words, from.words), b.copy(to.language, from.language), b.copy(to.lengths, from.lengths);
    };
    auto select_training = [&](const Side& from_source, int tgt) {
      select(source, from_source);
      select(target, Side{sentences[tgt], language[tgt], lengths[tgt]});
      b.copy(targets, shifted[tgt]);
    };
    StepPart select_ae[2], select_generation[2], select_bt[2];
    for (int l = 0; l < 2; ++l) {
      select_ae[l] = part(std::string("select_ae_") + kLanguages[l], false, 1, [&] {
        select_training(Side{noised[l], language[l], noised_lengths[l]}, l);
      });
    }
    for (int l = 0; l < 2; ++l) {
      select_generation[l] = part(std::string("select_generation_") + kLanguages[l], false, 1, [&] {
        select(generation_source, Side{sentences[l], language[l], lengths[l]});
        b.copy(generation_language, step_language[1 - l]);
      });
    }

    // Generation in eval mode (no dropout), its weight casts its own (run when it runs).
    const bool dropout = b.dropout_enabled();
    b.set_dropout_enabled(false);
    const TensorId counter = b.buffer("generation.step", {1}, DType::kInt32);
    const TensorId current = b.buffer("generation.current_token", {batch}, DType::kInt32);
    const TensorId generated = b.buffer("generation.ids", {batch, T}, DType::kInt32);
    std::vector<TensorId> cache_k, cache_v, memory_k, memory_v;
    const StepPart prologue = part("generation_prologue", true, 1, [&] {
      const TensorId memory = encode(b, s, d, generation_source, positions);
      for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "decoder." + std::to_string(l);
        cast_decoder_layer_weights(b, p + ".self_attn", p + ".encoder_attn", p + ".ffn", d);
        const auto [k, v] = cross_attention_memory(b, p + ".encoder_attn", memory, d);
        memory_k.push_back(k), memory_v.push_back(v);
        const int64_t dh = s.model / s.heads;
        cache_k.push_back(b.buffer(p + ".cache.k", {batch, s.heads, T, dh}, b.compute_dtype()));
        cache_v.push_back(b.buffer(p + ".cache.v", {batch, s.heads, T, dh}, b.compute_dtype()));
      }
      b.in_compute_dtype(b.parameter("decoder.embeddings.weight", {s.vocab, s.model}));
      b.in_compute_dtype(b.parameter("decoder.pred_layer.bias", {s.vocab}));
      b.update_counter(counter, 0, 0);
      b.copy(current, start_token);
      b.copy(generated, start_ids);
    });
    // One generated token: position counter[0] reads the token there and writes the next at counter[0] + 1.
    const StepPart decode = part("decode_step", true, T - 1, [&] {
      const TensorId position = b.fill_from_counter(counter, {batch, 1}, 0);
      TensorId x = embed(b, s, d, "decoder", b.reshape(current, {batch, 1}), generation_language, position);
      const TensorId key_count = b.fill_from_counter(counter, {batch}, 1);
      for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "decoder." + std::to_string(l);
        x = add_and_norm(b, p + ".self_attn_layer_norm", x,
                         cached_self_attention(b, p + ".self_attn", x, cache_k[l], cache_v[l], counter, key_count, d),
                         d, kLayerNormEpsilon);
        x = add_and_norm(b, p + ".encoder_attn_layer_norm", x,
                         cached_cross_attention(b, p + ".encoder_attn", x, memory_k[l], memory_v[l],
                                                generation_source.lengths, d),
                         d, kLayerNormEpsilon);
        x = add_and_norm(b, p + ".final_layer_norm", x, feed_forward(b, p + ".ffn", x, d, true), d, kLayerNormEpsilon);
      }
      const TensorId next = b.argmax(predict(b, s, b.reshape(x, {batch, s.model})));  // (B)
      b.write_at_counter(generated, next, counter, 1);
      b.copy(current, next);
      b.update_counter(counter, 1, 1);
    });
    const StepPart finish = part("end_sentences", true, 1, [&] { b.end_sentences(generated, generation_source.lengths, kEos, kPad); });
    for (int l = 0; l < 2; ++l) {  // l: the original language, reconstructed from its generated translation
      select_bt[l] = part(std::string("select_bt_") + kLanguages[l], false, 1, [&] {
        select_training(Side{generated, language[1 - l], lengths[l]}, l);
      });
    }
    b.set_dropout_enabled(dropout);
    b.forget_cached_casts();

    // The training pass: enc(source) -> dec(target_input) -> PredLayer -> cross-entropy over the target words.
    const TensorId memory = encode(b, s, d, source, positions);
    TensorId y = embed(b, s, d, "decoder", target.words, target.language, positions);
    for (int64_t l = 0; l < s.layers; ++l) {
      const std::string p = "decoder." + std::to_string(l);
      y = add_and_norm(b, p + ".self_attn_layer_norm", y,
                       multi_head_attention(b, p + ".self_attn", y, y, d, target.lengths, true), d, kLayerNormEpsilon);
      y = add_and_norm(b, p + ".encoder_attn_layer_norm", y,
                       multi_head_attention(b, p + ".encoder_attn", y, memory, d, source.lengths, false), d,
                       kLayerNormEpsilon);
      y = add_and_norm(b, p + ".final_layer_norm", y, feed_forward(b, p + ".ffn", y, d, true), d, kLayerNormEpsilon);
    }
    const TensorId logits = predict(b, s, b.reshape(y, {batch * T, s.model}));
    b.declare_unused_parameter(b.parameter("encoder.pred_layer.bias", {s.vocab}));  // XLM's encoder owns one

    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(logits, targets, 0.0, kPad);
    // Every full-scale sentence has T tokens (27 BPE + 2 delimiters, XLM's batches grouped by length): T - 1
    // predicted words per sentence and sub-step. Tiny sentences are shorter; T - 1 bounds them.
    const double words = static_cast<double>(batch * (T - 1));
    std::vector<SubStep> sub_steps;
    for (int l = 0; l < 2; ++l) sub_steps.push_back(SubStep{std::string("ae_") + kLanguages[l], {select_ae[l]}, words});
    for (int l = 0; l < 2; ++l) {
      const std::string name = std::string("bt_") + kLanguages[l] + "_" + kLanguages[1 - l] + "_" + kLanguages[l];
      sub_steps.push_back(SubStep{name, {select_generation[l], prologue, decode, finish, select_bt[l]}, words});
    }
    b.graph().set_sub_steps(sub_steps);
    built.units_per_step = 4 * words;
    // XLM's processed_w: Σ (len − 1) of the target side of every sub-step, counted from the synthesized batch. AE(l)
    // and BT(l-x-l) both reconstruct language l's sentences: each language's targets count twice.
    built.credited_inputs = {"en.targets", "de.targets", "en.targets", "de.targets"};
    built.credited_padding = kPad;
    built.forward_flops_per_unit = 0;
    for (size_t n = b.graph().training_begin(); n < b.graph().nodes().size(); ++n) {
      built.forward_flops_per_unit += node_matmul_flops(b.graph().nodes()[n]);
    }
    built.forward_flops_per_unit /= words;
    return built;
  }

  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override;

 private:
  // Word + position + language embeddings, LayerNorm (layer_norm_emb), dropout: XLM's TransformerModel.fwd.
  static TensorId embed(GraphBuilder& b, const Shape& s, const TransformerDims& d, const std::string& model,
                        TensorId words, TensorId languages, TensorId positions) {
    const TensorId x = b.add(b.add(b.embedding(words, b.parameter(model + ".embeddings.weight", {s.vocab, s.model}), kPad),
                                   b.embedding(positions, b.parameter(model + ".position_embeddings.weight",
                                                                      {s.positions, s.model}))),
                             b.embedding(languages, b.parameter(model + ".lang_embeddings.weight", {2, s.model})));
    return b.dropout(b.layernorm(x, b.parameter(model + ".layer_norm_emb.weight", {s.model}),
                                 b.parameter(model + ".layer_norm_emb.bias", {s.model}), kLayerNormEpsilon),
                     d.dropout);
  }

  static TensorId encode(GraphBuilder& b, const Shape& s, const TransformerDims& d, const Side& in,
                         TensorId positions) {
    TensorId x = embed(b, s, d, "encoder", in.words, in.language, positions);
    for (int64_t l = 0; l < s.layers; ++l) {
      const std::string p = "encoder." + std::to_string(l);
      x = add_and_norm(b, p + ".self_attn_layer_norm", x,
                       multi_head_attention(b, p + ".self_attn", x, x, d, in.lengths, false), d, kLayerNormEpsilon);
      x = add_and_norm(b, p + ".final_layer_norm", x, feed_forward(b, p + ".ffn", x, d, true), d, kLayerNormEpsilon);
    }
    return x;
  }

  // The decoder's PredLayer: Linear(D -> vocab) with the decoder's embeddings as weight and a bias of its own.
  static TensorId predict(GraphBuilder& b, const Shape& s, TensorId x) {
    return b.linear(x, b.parameter("decoder.embeddings.weight", {s.vocab, s.model}),
                    b.parameter("decoder.pred_layer.bias", {s.vocab}));
  }
};

// XLM's add_noise on the words between the delimiters: a local shuffle (each word moves by < 3 places), word
// dropout (0.1, at least one word kept) and blanking (0.1, the mask word). Returns the noised sentence.
std::vector<int32_t> add_noise(const std::vector<int32_t>& sentence, std::mt19937_64& random) {
  std::vector<int32_t> words(sentence.begin() + 1, sentence.end() - 1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> score(words.size());
  for (size_t i = 0; i < words.size(); ++i) score[i] = static_cast<double>(i) + uniform(random) * kWordShuffle;
  std::vector<size_t> order(words.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  std::vector<int32_t> kept;
  for (size_t i : order) {
    if (uniform(random) >= kWordDropout) kept.push_back(words[i]);
  }
  if (kept.empty() && !words.empty()) kept.push_back(words[order[random() % order.size()]]);
  std::vector<int32_t> noised{kEos};
  for (int32_t w : kept) noised.push_back(uniform(random) < kWordBlank ? kMask : w);
  noised.push_back(kEos);
  return noised;
}

void Unsupmt::synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const {
  const TensorInfo& source = graph.tensor(graph.find_tensor("source"));
  const int64_t batch = source.shape[0], time = source.shape[1];
  const int64_t vocab = graph.tensor(graph.find_tensor("decoder.embeddings.weight")).shape[0];
  const bool full = time == shape_for(WorkloadScale::kFull).time && vocab == shape_for(WorkloadScale::kFull).vocab;
  auto padded = [&] { return std::vector<int32_t>(static_cast<size_t>(batch * time), kPad); };
  for (int l = 0; l < 2; ++l) {
    std::vector<int32_t> sentences = padded(), noised = padded(), targets = padded();
    std::vector<int32_t> lengths(batch), noised_lengths(batch);
    for (int64_t s = 0; s < batch; ++s) {
      // One generator per (sample, language): rank r's rows are rows r·b.. of one rank's N·b.
      std::mt19937_64 random = sample_random(seed + static_cast<uint64_t>(l), first_sample + s);
      std::uniform_int_distribution<int32_t> word(kFirstWord, static_cast<int32_t>(vocab - 1));
      std::uniform_int_distribution<int64_t> tiny_length(3, time);
      const int64_t length = full ? time : tiny_length(random);
      std::vector<int32_t> sentence{kEos};
      for (int64_t t = 1; t + 1 < length; ++t) sentence.push_back(word(random));
      sentence.push_back(kEos);
      const std::vector<int32_t> noisy = add_noise(sentence, random);
      lengths[s] = static_cast<int32_t>(length);
      noised_lengths[s] = static_cast<int32_t>(noisy.size());
      std::copy(sentence.begin(), sentence.end(), sentences.begin() + s * time);
      std::copy(noisy.begin(), noisy.end(), noised.begin() + s * time);
      // The decoder reads sentence[t] and predicts sentence[t + 1]: length - 1 words; the rest is ignored.
      for (int64_t t = 0; t + 1 < length; ++t) targets[s * time + t] = sentence[t + 1];
    }
    const std::string p = kLanguages[l];
    write_input(write, graph, p + ".sentences", sentences);
    write_input(write, graph, p + ".lengths", lengths);
    write_input(write, graph, p + ".noised", noised);
    write_input(write, graph, p + ".noised_lengths", noised_lengths);
    write_input(write, graph, p + ".targets", targets);
    write_input(write, graph, p + ".language_ids", std::vector<int32_t>(batch * time, l));
    write_input(write, graph, p + ".step_language_ids", std::vector<int32_t>(batch, l));
    if (l == 0) {  // the training and generation inputs start as AE(en) and BT(en-de-en) select them
      write_input(write, graph, "source", noised);
      write_input(write, graph, "source_lengths", noised_lengths);
      write_input(write, graph, "target_input", sentences);
      write_input(write, graph, "target_lengths", lengths);
      write_input(write, graph, "targets", targets);
      write_input(write, graph, "generation.source", sentences);
      write_input(write, graph, "generation.source_lengths", lengths);
    }
  }
  write_input(write, graph, "source_language", std::vector<int32_t>(batch * time, 0));
  write_input(write, graph, "target_language", std::vector<int32_t>(batch * time, 0));
  write_input(write, graph, "generation.source_language", std::vector<int32_t>(batch * time, 0));
  write_input(write, graph, "generation.target_language", std::vector<int32_t>(batch, 1));
  std::vector<int32_t> positions(batch * time), start_ids = padded();
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t t = 0; t < time; ++t) positions[s * time + t] = static_cast<int32_t>(t);
    start_ids[s * time] = kEos;  // XLM's generate starts every sentence with </s>
  }
  write_input(write, graph, "positions", positions);
  write_input(write, graph, "generation.start_token", std::vector<int32_t>(batch, kEos));
  write_input(write, graph, "generation.start_ids", start_ids);
}

}  // namespace

const Workload& unsupmt() {
  static const Unsupmt kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
