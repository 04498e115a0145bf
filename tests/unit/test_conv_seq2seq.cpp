// conv_seq2seq beyond what every workload is checked for (test_workloads.cpp): the parameter count split as
// shared/WORKLOADS.md §8 gives it, the analytic FLOPs against the graph's and WORKLOADS.md's ≈149 M MAC per
// target token, fairseq's NAG settings, the synthetic sentence pairs and their masks, and on the CPU device the
// two properties fairseq's padding and causal convolutions guarantee: a target position's logits do not depend
// on later target tokens, and no logit depends on what sits in the padded source positions.
// Run: unit_tests --gtest_filter='ConvSeq2Seq*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/executor.h"
#include "scalebench/optimizer.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "src/cpu/positions.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

constexpr int32_t kPad = 1, kEos = 2;

int64_t count_with_prefix(const Graph& graph, const std::string& prefix) {
  int64_t count = 0;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    if (graph.tensor(p).name.rfind(prefix, 0) == 0) count += graph.tensor(p).elements();
  }
  return count;
}

TEST(ConvSeq2Seq, FullScaleParametersAsWorkloadsMdCountsThem) {
  const Workload& workload = find_workload("conv_seq2seq");
  Graph graph;
  GraphBuilder builder(graph);
  workload.build(builder, 2, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 216005176);
  EXPECT_EQ(workload.info().full_parameters, 216005176);
  EXPECT_EQ(count_with_prefix(graph, "encoder."), 86635264);
  EXPECT_EQ(count_with_prefix(graph, "decoder."), 129369912);
  EXPECT_EQ(count_with_prefix(graph, "encoder.embed_tokens."), 32442624);  // 42,243 x 768
  EXPECT_EQ(count_with_prefix(graph, "decoder.embed_tokens."), 33543168);  // 43,676 x 768
  EXPECT_EQ(count_with_prefix(graph, "encoder.embed_positions."), 786432);
  EXPECT_EQ(count_with_prefix(graph, "decoder.embed_positions."), 786432);
  for (const std::string side : {"encoder.", "decoder."}) {  // the convolutions with their two projections
    EXPECT_EQ(count_with_prefix(graph, side + "convolutions.") + count_with_prefix(graph, side + "projections."),
              51437568)
        << side;
    EXPECT_EQ(count_with_prefix(graph, side + "fc1."), 394240) << side;
    EXPECT_EQ(count_with_prefix(graph, side + "projections.9."), 526336) << side;    // 512 -> 1024, blocks 10
    EXPECT_EQ(count_with_prefix(graph, side + "projections.13."), 2101248) << side;  // 1024 -> 2048, block 14
  }
  EXPECT_EQ(count_with_prefix(graph, "decoder.attention."), 19709440);
  EXPECT_EQ(count_with_prefix(graph, "encoder.fc2."), 1574400);
  EXPECT_EQ(count_with_prefix(graph, "decoder.fc2."), 1049600);
  EXPECT_EQ(count_with_prefix(graph, "decoder.fc3."), 22449464);
  // The weight-norm g vectors are parameters of their own: one per output channel of every Linear and conv.
  EXPECT_EQ(graph.tensor(graph.find_tensor("encoder.convolutions.0.weight_norm")).shape, (std::vector<int64_t>{1024}));
  EXPECT_EQ(graph.tensor(graph.find_tensor("encoder.convolutions.0.weight_v")).shape,
            (std::vector<int64_t>{1024, 1, 3, 512}));
}

// The analytic count is the graph's (convolutions and GEMMs), and WORKLOADS.md's ≈149 M MAC per target token:
// 53,346,304 per source position + 94,844,928 per target position + 15 layers x 2 x 768 x L for the attention
// products. WORKLOADS.md takes L = 30 (148,882,432 MAC); the padded batch has L = 32 source positions, hence
// 148,928,512, 46,080 more (15 x 2 x 768 x 2).
TEST(ConvSeq2Seq, AnalyticFlopsAreTheGraphs) {
  const Workload& workload = find_workload("conv_seq2seq");
  for (WorkloadScale scale : {WorkloadScale::kFull, WorkloadScale::kTiny}) {
    Graph graph;
    GraphBuilder builder(graph);
    const BuiltWorkload built = workload.build(builder, 4, scale);
    const int64_t time = graph.tensor(graph.find_tensor("target_input")).shape[1];
    const double graph_flops = matmul_flops(graph, false);
    EXPECT_NEAR(built.forward_flops_per_unit * 4 * double(time), graph_flops, 1e-12 * graph_flops);
    if (scale == WorkloadScale::kFull) {
      EXPECT_EQ(built.forward_flops_per_unit / 2, 53346304.0 + 94844928.0 + 15 * 2 * 768 * 32);
      EXPECT_NEAR(built.forward_flops_per_unit / 2e6, 149.0, 0.5);
      // The estimate build() states; a replica credits its batch's count (test_credited_units.cpp).
      EXPECT_DOUBLE_EQ(built.units_per_step, 4 * 27.0);  // target tokens: the proxy table's ~27 per sentence
    }
  }
}

TEST(ConvSeq2Seq, ReferenceOptimizerIsFairseqsNag) {
  const OptimizerSettings s = find_workload("conv_seq2seq").reference_optimizer();
  EXPECT_EQ(s.kind, OptimizerKind::kNag);
  EXPECT_FLOAT_EQ(s.learning_rate, 0.5f);
  EXPECT_FLOAT_EQ(s.momentum, 0.99f);
  EXPECT_FLOAT_EQ(s.max_grad_norm, 0.1f);
  EXPECT_EQ(s.weight_decay, 0.0f);
  EXPECT_NO_THROW(validate_optimizer(s));
}

// Every input of a graph, by name, as written by synthesize().
struct Inputs {
  std::map<std::string, std::vector<uint8_t>> bytes;
  Inputs(const Graph& graph, uint64_t seed, int64_t first_sample) {
    find_workload("conv_seq2seq").synthesize(graph, seed, first_sample, [&](TensorId id, const void* data, size_t n) {
      EXPECT_EQ(n, graph.tensor(id).bytes()) << graph.tensor(id).name;
      const auto* p = static_cast<const uint8_t*>(data);
      bytes[graph.tensor(id).name].assign(p, p + n);
    });
  }
  template <typename T>
  std::vector<T> get(const std::string& name) const {
    const auto& b = bytes.at(name);
    std::vector<T> values(b.size() / sizeof(T));
    std::memcpy(values.data(), b.data(), b.size());
    return values;
  }
};

TEST(ConvSeq2Seq, SyntheticPairsMasksAndRankSlices) {
  const int64_t batch = 6;
  Graph graph, half;
  GraphBuilder builder(graph), half_builder(half);
  find_workload("conv_seq2seq").build(builder, batch, WorkloadScale::kFull);
  find_workload("conv_seq2seq").build(half_builder, batch / 2, WorkloadScale::kFull);
  const Inputs inputs(graph, 7, 0);
  EXPECT_EQ(inputs.bytes.size(), graph.tensors_with_role(TensorRole::kInput).size()) << "every input written";
  const auto src = inputs.get<int32_t>("source"), lengths = inputs.get<int32_t>("source_lengths");
  const auto positions = inputs.get<int32_t>("source_positions");
  const auto mask = inputs.get<float>("source_mask"), length_scale = inputs.get<float>("source_length_scale");
  const auto tgt_in = inputs.get<int32_t>("target_input"), targets = inputs.get<int32_t>("targets");
  const int64_t time = 32;
  for (int64_t s = 0; s < batch; ++s) {
    EXPECT_GE(lengths[s], 2);
    EXPECT_LE(lengths[s], time);
    EXPECT_EQ(src[s * time + lengths[s] - 1], kEos);
    EXPECT_FLOAT_EQ(length_scale[s], std::sqrt(float(lengths[s])));
    for (int64_t t = 0; t < time; ++t) {
      const bool word = t < lengths[s];
      EXPECT_EQ(mask[s * time + t], word ? 1.0f : 0.0f);
      EXPECT_EQ(src[s * time + t] != kPad, word);
      EXPECT_EQ(positions[s * time + t], word ? kPad + 1 + t : kPad) << "fairseq's make_positions";
      if (t > 0 && targets[s * time + t] != kPad) {  // where a target is predicted: the previous target
        EXPECT_EQ(tgt_in[s * time + t], targets[s * time + t - 1]) << "teacher forcing";
      }
    }
    EXPECT_EQ(tgt_in[s * time], kEos);
  }
  // Rank r of a job with batch b holds rows r·b .. r·b + b - 1 of one rank's batch N·b.
  for (int rank = 0; rank < 2; ++rank) {
    const Inputs slice(half, 7, rank * batch / 2);
    for (const auto& [name, all] : inputs.bytes) {
      const std::vector<uint8_t>& part = slice.bytes.at(name);
      const size_t offset = rank * part.size();
      EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + std::ptrdiff_t(offset))) << name << " rank " << rank;
    }
  }
}

// The tiny graph on the CPU without dropout, with right-padded pairs of explicit lengths.
struct TinyModel {
  Graph graph;
  BuiltWorkload built;
  MemoryPlan plan;
  std::unique_ptr<CpuExecutor> e;
  TensorId logits = kNoTensor;
  int64_t batch = 2, time = 0;

  TinyModel() {
    GraphBuilder builder(graph);
    builder.disable_dropout();
    built = find_workload("conv_seq2seq").build(builder, batch, WorkloadScale::kTiny);
    for (const Node& node : graph.nodes()) {
      if (node.op == "softmax_cross_entropy") logits = node.inputs[0];
    }
    graph.tensor(logits).read_after_step = true;
    append_backward(graph, built.loss);
    plan = plan_memory(graph);
    e = std::make_unique<CpuExecutor>(graph, plan);
    time = graph.tensor(graph.find_tensor("source")).shape[1];
    uint32_t seed = 80;
    for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
      const auto values = test::random_normal(size_t(graph.tensor(p).elements()), seed++, 0.5f);
      e->write_tensor(p, values.data(), graph.tensor(p).bytes());
    }
  }
  // Sentences of the given source lengths; tokens are given for the whole padded rows (pads included).
  std::vector<float> logits_for(const std::vector<int32_t>& src, const std::vector<int32_t>& lengths,
                                const std::vector<int32_t>& tgt_in) {
    std::vector<float> mask(static_cast<size_t>(batch * time), 0.0f), scale(static_cast<size_t>(batch));
    for (int64_t s = 0; s < batch; ++s) {
      for (int64_t t = 0; t < lengths[s]; ++t) mask[size_t(s * time + t)] = 1.0f;
      scale[size_t(s)] = std::sqrt(float(lengths[s]));
    }
    std::vector<int32_t> src_positions(src.size()), tgt_positions(tgt_in.size());
    for (int64_t s = 0; s < batch; ++s) {
      cpu::positions_from_lengths(&lengths[s], &src_positions[size_t(s * time)], 1, time, kPad);
    }
    cpu::make_positions(tgt_in.data(), tgt_positions.data(), batch, time, kPad);
    std::vector<int32_t> targets(tgt_in.size(), 5);
    auto write = [&](const char* name, const auto& values) {
      e->write_tensor(graph.find_tensor(name), values.data(), values.size() * sizeof(values[0]));
    };
    write("source", src), write("source_positions", src_positions), write("source_lengths", lengths);
    write("source_mask", mask), write("source_length_scale", scale), write("target_input", tgt_in);
    write("target_positions", tgt_positions), write("targets", targets);
    e->run();
    std::vector<float> values(static_cast<size_t>(graph.tensor(logits).elements()));
    e->read_tensor(logits, values.data(), values.size() * sizeof(float));
    return values;
  }
};

TEST(ConvSeq2Seq, LogitsIgnoreLaterTargetsAndPaddedSourcePositions) {
  TinyModel m;
  const int64_t time = m.time, vocab = m.graph.tensor(m.logits).shape.back();
  ASSERT_GE(time, 6);
  const std::vector<int32_t> lengths{int32_t(time - 3), int32_t(time)};
  std::vector<int32_t> src = test::random_ids(size_t(2 * time), 1, 4, 30), tgt = test::random_ids(size_t(2 * time), 2, 4, 30);
  for (int64_t t = lengths[0]; t < time; ++t) src[size_t(t)] = kPad;
  const std::vector<float> base = m.logits_for(src, lengths, tgt);

  // A different target token at position 3 of sentence 0: its earlier positions see nothing of it.
  std::vector<int32_t> later = tgt;
  later[3] = later[3] == 7 ? 8 : 7;
  const std::vector<float> changed = m.logits_for(src, lengths, later);
  const size_t row = size_t(vocab);
  EXPECT_TRUE(std::equal(base.begin(), base.begin() + 3 * row, changed.begin())) << "causal convolutions";
  EXPECT_FALSE(std::equal(base.begin() + 3 * row, base.begin() + 4 * row, changed.begin() + 3 * row));
  EXPECT_TRUE(std::equal(base.begin() + time * row, base.end(), changed.begin() + time * row)) << "sentence 1";

  // Words instead of padding beyond sentence 0's length (mask and lengths unchanged): nothing changes.
  std::vector<int32_t> filled = src;
  for (int64_t t = lengths[0]; t < time; ++t) filled[size_t(t)] = int32_t(10 + t);
  EXPECT_EQ(m.logits_for(filled, lengths, tgt), base) << "padded source positions are masked everywhere";
  // ...while a word inside the sentence does change its logits.
  std::vector<int32_t> inside = src;
  inside[0] = inside[0] == 9 ? 11 : 9;
  EXPECT_NE(m.logits_for(inside, lengths, tgt), base);
}

}  // namespace
}  // namespace sb
