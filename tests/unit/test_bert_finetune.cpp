// bert_finetune against shared/WORKLOADS.md §11: 108,893,186 trainable parameters (BertModel 109,482,240 minus
// the 590,592 of the dropped pooler, plus the QA head's 1,538), the analytic 35.33 GMAC per sequence equal to
// the graph's own matrix products, and synthetic SQuAD features laid out as [CLS] question [SEP] document
// [SEP] with answer spans inside the document. (Training and gradients of the tiny graph: test_workloads.cpp.)
// Run: unit_tests --gtest_filter='BertFinetune*'.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

constexpr int32_t kCls = 101, kSep = 102;

TEST(BertFinetune, FullScaleParametersAndFlopsAsSpecified) {
  const Workload& workload = find_workload("bert_finetune");
  EXPECT_EQ(workload.info().unit, "sequences");
  EXPECT_EQ(workload.info().default_batch, 48);
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = workload.build(builder, 48, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 108893186);
  EXPECT_EQ(workload.info().full_parameters, 108893186);
  EXPECT_EQ(graph.tensor(graph.find_tensor("qa_outputs.weight")).shape, (std::vector<int64_t>{2, 768}));
  EXPECT_EQ(graph.tensor(graph.find_tensor("qa_outputs.bias")).shape, (std::vector<int64_t>{2}));
  for (const TensorInfo& info : graph.tensors()) EXPECT_EQ(info.name.find("pooler"), std::string::npos) << info.name;
  EXPECT_EQ(graph.tensor(graph.find_tensor("input_ids")).shape, (std::vector<int64_t>{48, 384}));
  EXPECT_EQ(built.units_per_step, 48.0);
  // The analytic count is the graph's: every matrix product of the forward pass, per sequence.
  EXPECT_NEAR(built.forward_flops_per_unit, matmul_flops(graph, false) / 48, 1e-9 * built.forward_flops_per_unit);
  EXPECT_NEAR(built.forward_flops_per_unit / 2, 35.33e9, 0.005e9);  // WORKLOADS.md: 35.33 GMAC per sequence
}

// Inputs synthesised for a graph of `batch` sequences at `scale`, by name.
std::map<std::string, std::vector<int32_t>> synthesize(int64_t batch, WorkloadScale scale, uint64_t seed) {
  const Workload& workload = find_workload("bert_finetune");
  Graph graph;
  GraphBuilder builder(graph);
  workload.build(builder, batch, scale);
  std::map<std::string, std::vector<int32_t>> inputs;
  workload.synthesize(graph, seed, [&](TensorId id, const void* data, size_t bytes) {
    EXPECT_EQ(bytes, graph.tensor(id).bytes()) << graph.tensor(id).name;
    auto& values = inputs[graph.tensor(id).name];
    values.resize(bytes / sizeof(int32_t));
    std::memcpy(values.data(), data, bytes);
  });
  return inputs;
}

void expect_squad_features(int64_t batch, WorkloadScale scale, int64_t time, int64_t max_query) {
  auto in = synthesize(batch, scale, 7);
  ASSERT_EQ(in.size(), 6u);  // input_ids, token_type_ids, position_ids, lengths, start and end positions
  const auto &ids = in["input_ids"], &types = in["token_type_ids"];
  for (int64_t t = 0; t < time; ++t) EXPECT_EQ(in["position_ids"][t], t);
  int64_t padded = 0;
  for (int64_t s = 0; s < batch; ++s) {
    const int32_t* row = &ids[s * time];
    const int32_t* type = &types[s * time];
    const int64_t length = in["lengths"][s];
    ASSERT_GE(length, time / 2);
    ASSERT_LE(length, time);
    padded += length < time;
    EXPECT_EQ(row[0], kCls);
    EXPECT_EQ(row[length - 1], kSep);
    int64_t query = 1;
    while (row[query] != kSep) ++query;  // the first [SEP] closes the question
    --query;
    EXPECT_GE(query, 1);
    EXPECT_LE(query, max_query);
    for (int64_t t = 0; t < time; ++t) {
      const bool document = t >= query + 2 && t < length;
      EXPECT_EQ(type[t], document ? 1 : 0) << "sequence " << s << " position " << t;
      if (t >= length) EXPECT_EQ(row[t], 0) << "padding at " << t;
      if (t > 0 && t < length - 1 && t != query + 1) EXPECT_GE(row[t], 999) << "a word piece at " << t;
    }
    const int32_t start = in["start_positions"][s], end = in["end_positions"][s];
    EXPECT_GE(start, query + 2) << "the answer starts inside the document";
    EXPECT_LE(start, end);
    EXPECT_LE(end, length - 2) << "the answer ends before the final [SEP]";
  }
  EXPECT_GT(padded, 0) << "some features are padded (the key-padding lengths matter)";
  EXPECT_EQ(in, synthesize(batch, scale, 7)) << "deterministic from the seed";
  EXPECT_NE(in, synthesize(batch, scale, 8)) << "another seed, other data";
}

TEST(BertFinetune, SyntheticFeaturesFullScale) { expect_squad_features(48, WorkloadScale::kFull, 384, 64); }

TEST(BertFinetune, SyntheticFeaturesTinyScale) { expect_squad_features(40, WorkloadScale::kTiny, 12, 4); }

}  // namespace
}  // namespace sb
