// mt_dnn beyond what every workload is checked for (test_workloads.cpp): the parameter count split as
// shared/WORKLOADS.md §12 gives it, the analytic FLOPs against the graph's, mt-dnn's input layout and masks,
// and that only mnli's SAN head and the encoder receive gradients while the other seven heads and the
// pooler are kept with zero gradients. Run: unit_tests --gtest_filter='MtDnn*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

int64_t count_with_prefix(const Graph& graph, const std::string& prefix) {
  int64_t count = 0;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    if (starts_with(graph.tensor(p).name, prefix)) count += graph.tensor(p).elements();
  }
  return count;
}

TEST(MtDnn, FullScaleParametersAsWorkloadsMdCountsThem) {
  const Workload& workload = find_workload("mt_dnn");
  Graph graph;
  GraphBuilder builder(graph);
  workload.build(builder, 8, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 371933205);
  EXPECT_EQ(workload.info().full_parameters, 371933205);
  EXPECT_EQ(count_with_prefix(graph, "embeddings."), 31782912);
  EXPECT_EQ(count_with_prefix(graph, "encoder.layer.0."), 12596224);
  EXPECT_EQ(count_with_prefix(graph, "pooler."), 1049600);
  EXPECT_EQ(count_with_prefix(graph, "scoring_list."), 36791317);
  EXPECT_EQ(count_with_prefix(graph, "scoring_list.0."), 7360516);  // mnli: SAN, 3 classes
  for (int task : {1, 2, 3, 4}) {  // rte, qqp, qnli, mrpc: SAN, 2 classes
    EXPECT_EQ(count_with_prefix(graph, "scoring_list." + std::to_string(task) + "."), 7356419);
  }
  EXPECT_EQ(count_with_prefix(graph, "scoring_list.5."), 2050);  // sst
  EXPECT_EQ(count_with_prefix(graph, "scoring_list.6."), 2050);  // cola
  EXPECT_EQ(count_with_prefix(graph, "scoring_list.7."), 1025);  // stsb
}

// The analytic count is the graph's (gemm nodes plus the SAN ops' products), and WORKLOADS.md's 39.5 GMAC
// per sequence at 128 tokens.
TEST(MtDnn, AnalyticFlopsAreTheGraphs) {
  const Workload& workload = find_workload("mt_dnn");
  for (WorkloadScale scale : {WorkloadScale::kFull, WorkloadScale::kTiny}) {
    Graph graph;
    GraphBuilder builder(graph);
    const BuiltWorkload built = workload.build(builder, 4, scale);
    const double graph_flops = matmul_flops(graph, false);
    EXPECT_NEAR(built.forward_flops_per_unit * 4, graph_flops, 1e-12 * graph_flops);
    EXPECT_EQ(built.units_per_step, 4.0);
    if (scale == WorkloadScale::kFull) EXPECT_NEAR(built.forward_flops_per_unit / 2e9, 39.5, 0.05);
  }
}

struct TinyInputs {
  std::map<std::string, std::vector<uint8_t>> bytes;
  explicit TinyInputs(const Graph& graph, uint64_t seed) {
    find_workload("mt_dnn").synthesize(graph, seed, [&](TensorId id, const void* data, size_t size) {
      ASSERT_EQ(size, graph.tensor(id).bytes()) << graph.tensor(id).name;
      const auto* p = static_cast<const uint8_t*>(data);
      bytes[graph.tensor(id).name].assign(p, p + size);
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

// [CLS] A [SEP] B [SEP] [PAD]...: the hypothesis mask keeps segment A ([CLS] A [SEP], token type 0), the
// premise mask segment B and its [SEP] (type 1), as mt-dnn's batcher builds them.
TEST(MtDnn, SyntheticPairsAndMasksFollowMtDnnsBatcher) {
  Graph graph;
  GraphBuilder builder(graph);
  const int64_t batch = 6;
  find_workload("mt_dnn").build(builder, batch, WorkloadScale::kTiny);
  const TinyInputs inputs(graph, 7);
  EXPECT_EQ(inputs.bytes.size(), graph.tensors_with_role(TensorRole::kInput).size()) << "every input written";
  const auto ids = inputs.get<int32_t>("input_ids"), types = inputs.get<int32_t>("token_type_ids");
  const auto lengths = inputs.get<int32_t>("lengths"), labels = inputs.get<int32_t>("labels");
  const auto rows = inputs.get<int32_t>("hypothesis_rows");
  const auto hyp_mask = inputs.get<uint8_t>("hypothesis_mask"), premise_mask = inputs.get<uint8_t>("premise_mask");
  const int64_t time = static_cast<int64_t>(ids.size()) / batch, hyp = static_cast<int64_t>(hyp_mask.size()) / batch;
  for (int64_t s = 0; s < batch; ++s) {
    const int32_t* row = &ids[s * time];
    EXPECT_EQ(row[0], 101);
    EXPECT_EQ(row[lengths[s] - 1], 102);
    int64_t a_length = 0;
    while (types[s * time + a_length] == 0 && a_length < lengths[s]) ++a_length;
    ASSERT_GE(a_length, 3);
    ASSERT_LE(a_length, hyp);
    EXPECT_LT(a_length, lengths[s] - 1) << "segment B has a token";
    EXPECT_EQ(row[a_length - 1], 102);
    for (int64_t t = 0; t < time; ++t) {
      EXPECT_EQ(premise_mask[s * time + t], !(t >= a_length && t < lengths[s])) << s << ", " << t;
      if (t >= lengths[s]) EXPECT_EQ(row[t], 0);
    }
    for (int64_t t = 0; t < hyp; ++t) {
      EXPECT_EQ(hyp_mask[s * hyp + t], t >= a_length);
      EXPECT_EQ(rows[s * hyp + t], s * time + t);
    }
    EXPECT_GE(labels[s], 0);
    EXPECT_LT(labels[s], 3);
  }
  EXPECT_EQ(inputs.bytes, TinyInputs(graph, 7).bytes) << "deterministic from the seed";
  EXPECT_NE(inputs.get<int32_t>("input_ids"), TinyInputs(graph, 8).get<int32_t>("input_ids"));
}

// One tiny step on the CPU: the encoder and mnli's head get gradients, everything else exactly zero.
TEST(MtDnn, OnlyTheStepTasksHeadAndTheEncoderGetGradients) {
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = find_workload("mt_dnn").build(builder, 3, WorkloadScale::kTiny);
  const auto gradients = append_backward(graph, built.loss);
  const MemoryPlan plan = plan_memory(graph);
  CpuExecutor e(graph, plan);
  find_workload("mt_dnn").synthesize(graph, 3, [&](TensorId id, const void* data, size_t bytes) {
    e.write_tensor(id, data, bytes);
  });
  uint32_t seed = 50;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const auto values = test::random_normal(static_cast<size_t>(graph.tensor(p).elements()), seed++, 0.1f);
    e.write_tensor(p, values.data(), graph.tensor(p).bytes());
    std::fill_n(e.f32(gradients.at(p)), graph.tensor(p).elements(), std::nanf(""));  // poison
  }
  e.run();
  ASSERT_TRUE(std::isfinite(*e.f32(built.loss)));
  for (const auto& [p, g] : gradients) {
    const std::string& name = graph.tensor(p).name;
    double norm = 0;
    for (int64_t i = 0; i < graph.tensor(p).elements(); ++i) norm += std::fabs(e.f32(g)[i]);
    const bool unused = starts_with(name, "pooler.") || (starts_with(name, "scoring_list.") &&
                                                         !starts_with(name, "scoring_list.0."));
    EXPECT_EQ(graph.tensor(p).unused_this_step, unused) << name;
    if (unused) {
      EXPECT_EQ(norm, 0.0) << name;
    } else if (name.find("k_proj.bias") == std::string::npos &&
               name.find("query_wsum.linear.bias") == std::string::npos) {
      // (a key bias and the self-attention score bias shift every score alike: zero up to rounding)
      EXPECT_GT(norm, 0.0) << name;
      EXPECT_TRUE(std::isfinite(norm)) << name;
    }
  }
}

}  // namespace
}  // namespace sb
