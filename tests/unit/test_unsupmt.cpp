// unsupmt (workloads/unsupmt.cpp): XLM's encoder and decoder parameter counts at full scale, the four sub-steps
// and their decode loop, and, on the CPU device at tiny scale, that the greedy generation with its key/value
// cache computes the logits of the same decoder run teacher-forced on the generated words (so the cache, the
// counter-driven positions and key counts and the cross-attention memory are right), and that a
// back-translation sub-step trains on what was generated.
// Run: unit_tests --gtest_filter='Unsupmt*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "scalebench/autodiff.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

TEST(Unsupmt, FullScaleEncoderAndDecoderParameterCounts) {
  Graph graph;
  GraphBuilder builder(graph);
  const Workload& workload = find_workload("unsupmt");
  const BuiltWorkload built = workload.build(builder, 275, WorkloadScale::kFull);
  int64_t encoder = 0, decoder = 0;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = graph.tensor(p);
    (info.name.rfind("encoder.", 0) == 0 ? encoder : decoder) += info.elements();
    EXPECT_TRUE(info.name.rfind("encoder.", 0) == 0 || info.name.rfind("decoder.", 0) == 0) << info.name;
  }
  EXPECT_EQ(encoder, 142422203);  // WORKLOADS.md §9
  EXPECT_EQ(decoder, 167624891);
  EXPECT_EQ(graph.parameter_count(), 310047094);
  EXPECT_EQ(graph.tensor(graph.find_tensor("decoder.embeddings.weight")).shape, (std::vector<int64_t>{64699, 1024}));
  // Four sub-steps; the back-translations generate 28 tokens (29-token sentences) in a repeated decode part.
  ASSERT_EQ(graph.sub_steps().size(), 4u);
  const std::vector<std::string> names = {"ae_en", "ae_de", "bt_en_de_en", "bt_de_en_de"};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(graph.sub_steps()[k].name, names[k]);
    EXPECT_DOUBLE_EQ(graph.sub_steps()[k].units, 275.0 * 28);
    int64_t generated = 0;
    for (const StepPart& part : graph.sub_steps()[k].parts) generated += part.repeat > 1 ? part.repeat : 0;
    EXPECT_EQ(generated, k < 2 ? 0 : 28) << names[k];
  }
  EXPECT_DOUBLE_EQ(built.units_per_step, 4 * 275.0 * 28);
  // Training FLOPs per word (forward, matrix products): ~244 M MAC (WORKLOADS.md), plus attention products.
  EXPECT_NEAR(built.forward_flops_per_unit / 2, 244e6, 0.05 * 244e6);
}

constexpr float kTableScale = 0.3f, kLayerScale = 3.0f;

// In bf16 the decode loop reads weights cast once by the generation's prologue: no cast node repeats per token,
// and none of the prologue's casts is reused by the training pass (which casts its own, as every sub-step must).
TEST(Unsupmt, Bf16DecodeLoopCastsNothing) {
  Graph graph;
  GraphBuilder builder(graph, DType::kBFloat16);
  find_workload("unsupmt").build(builder, 4, WorkloadScale::kTiny);
  const SubStep& bt = graph.sub_steps()[2];
  std::set<TensorId> generation_casts;
  int casts_in_prologue = 0;
  for (const StepPart& part : bt.parts) {
    for (size_t n = part.begin; n < part.end; ++n) {
      const Node& node = graph.nodes()[n];
      if (node.op != "cast") continue;
      EXPECT_EQ(part.repeat, 1) << "a cast inside the repeated decode step: " << graph.tensor(node.outputs[0]).name;
      casts_in_prologue += part.name == "generation_prologue";
      generation_casts.insert(node.outputs[0]);
    }
  }
  EXPECT_GT(casts_in_prologue, 0);
  for (size_t n = graph.training_begin(); n < graph.nodes().size(); ++n) {
    for (TensorId in : graph.nodes()[n].inputs) {
      EXPECT_EQ(generation_casts.count(in), 0u) << "the training pass reads a generation cast: " << graph.tensor(in).name;
    }
  }
}

struct TinyUnsupmt {
  Graph graph;
  BuiltWorkload built;
  MemoryPlan plan;
  std::unique_ptr<CpuExecutor> e;
  const Workload& workload = find_workload("unsupmt");

  explicit TinyUnsupmt(int64_t batch) {
    GraphBuilder b(graph);
    b.disable_dropout();
    built = workload.build(b, batch, WorkloadScale::kTiny);
    append_backward(graph, built.loss);
    plan = plan_memory(graph);
    e = std::make_unique<CpuExecutor>(graph, plan);
    workload.synthesize(graph, 5, [&](TensorId id, const void* data, size_t bytes) { e->write_tensor(id, data, bytes); });
    // Decisive logits (argmax far from ties) and a generation that is not one repeated word: with weights of
    // one small scale, a tied output layer reads the current word back out of the residual stream and copies it
    // forever; layers whose outputs outweigh the embeddings make each word depend on its context.
    std::mt19937 random(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
      const TensorInfo& info = graph.tensor(p);
      const bool gain = info.name.find("norm") != std::string::npos && info.name.find("bias") == std::string::npos;
      const bool table = info.name.find("embeddings") != std::string::npos;
      const float scale = table ? kTableScale : kLayerScale / std::sqrt(static_cast<float>(info.shape.back()));
      for (int64_t i = 0; i < info.elements(); ++i) e->f32(p)[i] = gain ? 1.0f : scale * normal(random);
    }
  }
  std::vector<int32_t> ints(const std::string& name) {
    const TensorId id = graph.find_tensor(name);
    std::vector<int32_t> v(static_cast<size_t>(graph.tensor(id).elements()));
    e->read_tensor(id, v.data(), v.size() * sizeof(int32_t));
    return v;
  }
  void write(const std::string& name, const std::vector<int32_t>& v) {
    e->write_tensor(graph.find_tensor(name), v.data(), v.size() * sizeof(int32_t));
  }
  void run_parts(size_t k) {
    for (const StepPart& part : graph.sub_steps()[k].parts) {
      for (int64_t r = 0; r < part.repeat; ++r) e->run_nodes(part.begin, part.end);
    }
  }
};

// Each decode step's logits (read after every repetition of the loop) equal the teacher-forced decoder's at
// that position within fp32 rounding (the cached attention sums the same terms over a masked, longer key range),
// and the generated word is their argmax.
TEST(Unsupmt, GreedyGenerationIsTheTeacherForcedDecoderWithACache) {
  const int64_t batch = 4;
  TinyUnsupmt t(batch);
  std::vector<std::vector<float>> step_logits;  // per decode step, (B, V)
  TensorId decode_logits = kNoTensor;
  for (const StepPart& part : t.graph.sub_steps()[2].parts) {  // bt_en_de_en
    for (int64_t r = 0; r < part.repeat; ++r) {
      t.e->run_nodes(part.begin, part.end);
      if (part.repeat < 2) continue;
      for (size_t n = part.begin; n < part.end; ++n) {
        if (t.graph.nodes()[n].op == "argmax") decode_logits = t.graph.nodes()[n].inputs[0];
      }
      ASSERT_NE(decode_logits, kNoTensor);
      const float* l = t.e->f32(decode_logits);
      step_logits.emplace_back(l, l + t.graph.tensor(decode_logits).elements());
    }
  }
  const std::vector<int32_t> generated = t.ints("generation.ids");
  const std::vector<int32_t> lengths = t.ints("en.lengths");
  const int64_t time = t.graph.tensor(t.graph.find_tensor("generation.ids")).shape[1];
  ASSERT_EQ(static_cast<int64_t>(step_logits.size()), time - 1);
  // The back-translation's training pass reads exactly that, with the English sentences as targets.
  EXPECT_EQ(t.ints("source"), generated);
  EXPECT_EQ(t.ints("targets"), t.ints("en.targets"));
  EXPECT_EQ(t.ints("source_language"), std::vector<int32_t>(batch * time, 1));
  std::set<int32_t> distinct;
  for (int64_t s = 0; s < batch; ++s) {
    EXPECT_EQ(generated[s * time], 1) << "starts with </s>";
    EXPECT_EQ(generated[s * time + lengths[s] - 1], 1) << "ends with </s> at the source's length";
    for (int64_t c = lengths[s]; c < time; ++c) EXPECT_EQ(generated[s * time + c], 2) << "pad after the end";
    for (int64_t c = 1; c + 1 < lengths[s]; ++c) distinct.insert(generated[s * time + c]);
  }
  std::string words;
  for (int32_t w : generated) words += std::to_string(w) + " ";
  EXPECT_GE(distinct.size(), 3u) << "the generation should not be one repeated word: " << words;

  // Teacher forcing: the training pass's decoder over the generated German (full causal lengths), the English
  // sentences as the encoder's input.
  t.write("source", t.ints("en.sentences"));
  t.write("source_lengths", lengths);
  t.write("source_language", std::vector<int32_t>(batch * time, 0));
  t.write("target_input", generated);
  t.write("target_language", std::vector<int32_t>(batch * time, 1));
  t.write("target_lengths", std::vector<int32_t>(batch, static_cast<int32_t>(time)));
  t.e->run_nodes(t.graph.training_begin(), t.e->forward_node_count());
  TensorId logits = kNoTensor;
  for (size_t n = t.graph.training_begin(); n < t.graph.nodes().size(); ++n) {
    if (t.graph.nodes()[n].op == "softmax_cross_entropy") logits = t.graph.nodes()[n].inputs[0];
  }
  ASSERT_NE(logits, kNoTensor);
  const int64_t vocab = t.graph.tensor(logits).shape[1];
  double worst = 0;
  int compared = 0;
  for (int64_t s = 0; s < batch; ++s) {
    // Position c's input words (0..c) are the ones the decode step saw while c + 1 < length (end_sentences
    // rewrites the rest afterwards).
    for (int64_t c = 0; c + 1 < lengths[s]; ++c) {
      const float* forced = t.e->f32(logits) + (s * time + c) * vocab;
      const float* cached = step_logits[static_cast<size_t>(c)].data() + s * vocab;
      int64_t best = 0;
      for (int64_t v = 0; v < vocab; ++v) {
        worst = std::max(worst, std::fabs(static_cast<double>(forced[v]) - cached[v]) / (1.0 + std::fabs(forced[v])));
        best = forced[v] > forced[best] ? v : best;
      }
      if (c + 2 < lengths[s]) EXPECT_EQ(best, generated[s * time + c + 1]) << "sentence " << s << " word " << c + 1;
      ++compared;
    }
  }
  EXPECT_LT(worst, 1e-4) << "largest logit difference, cached decode step vs teacher forcing";
  EXPECT_GT(compared, 8);
}

// The autoencoder sub-steps read the noised sentences (XLM's word shuffle, dropout and blanking) and
// reconstruct the clean ones.
TEST(Unsupmt, AutoencoderSubStepsSelectNoisedInputs) {
  TinyUnsupmt t(3);
  for (int l = 0; l < 2; ++l) {
    t.run_parts(static_cast<size_t>(l));
    const std::string p = l == 0 ? "en" : "de";
    EXPECT_EQ(t.ints("source"), t.ints(p + ".noised"));
    EXPECT_EQ(t.ints("target_input"), t.ints(p + ".sentences"));
    EXPECT_EQ(t.ints("targets"), t.ints(p + ".targets"));
    const std::vector<int32_t> noised = t.ints(p + ".noised_lengths"), lengths = t.ints(p + ".lengths");
    for (size_t s = 0; s < lengths.size(); ++s) EXPECT_LE(noised[s], lengths[s]);  // dropout only removes
  }
  EXPECT_NE(t.ints("en.sentences"), t.ints("de.sentences"));
}

}  // namespace
}  // namespace sb
