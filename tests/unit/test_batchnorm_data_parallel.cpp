// The data-parallel invariant with BatchNorm (STYLE.md rule 5, src/train/dp_check.cpp) on the CPU device:
// N "ranks" of a small CNN (conv → BN+ReLU → conv → BN+ReLU → pool → linear) with batch b each, their
// gradients averaged after every backward pass as the all-reduce does, against one graph of batch N·b whose
// BatchNorms have N statistics groups: the same gradients, the same weights after k steps of --check's SGD
// with momentum, and the reference's running statistics equal to rank 0's. Without the groups the reference
// fails --check's tolerance, so the test can fail. The CNN is built here, not registered: replicas
// (src/train/replica.h) build registered workloads only, and none has BatchNorm yet.
// Run: unit_tests --gtest_filter='*BatchNormDataParallel*'.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/train/dp_check.h"
#include "src/train/replica.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::relative_l2;

constexpr int64_t kImage = 6, kInChannels = 3, kClasses = 4;
constexpr int kSteps = 3;

// Relative L2 difference of the averaged ranks' gradients and the reference's: both in fp32 from the same
// statistics (computed in double), summed in another order (the convolutions' weight gradients over b or N·b
// images; the average over ranks in double). Measured 3.4e-8 (2 ranks x 3) and 5.6e-8 (4 x 1), the updates
// after 3 steps 1.5e-7 and 3.4e-7; without the groups 0.43 and 0.88. Bound 1e-5 (1e-4 after 3 steps).
constexpr double kGradientTolerance = 1e-5;

// One rank's model (or the reference's): the graph, its plan and a CPU executor, with fixed inputs.
struct TinyCnn {
  Graph graph;
  TensorId x = kNoTensor, targets = kNoTensor, loss = kNoTensor;
  MemoryPlan plan;
  std::unique_ptr<CpuExecutor> executor;

  TinyCnn(int64_t batch, int64_t groups) {
    GraphBuilder b(graph);
    b.set_batchnorm_groups(groups);
    BatchNormOptions relu;
    relu.activation = BatchNormOptions::Activation::kRelu;
    x = b.input("x", {batch, kImage, kImage, kInChannels});
    TensorId h = b.conv2d(x, b.parameter("conv0.weight", {8, 3, 3, kInChannels}), kNoTensor,
                          Conv2dOptions::same_padding());
    h = b.batchnorm(h, b.parameter("block0.norm.weight", {8}), b.parameter("block0.norm.bias", {8}), relu);
    h = b.conv2d(h, b.parameter("conv1.weight", {8, 3, 3, 8}), kNoTensor, Conv2dOptions::same_padding(2));
    h = b.batchnorm(h, b.parameter("block1.norm.weight", {8}), b.parameter("block1.norm.bias", {8}), relu);
    // The activation before the pooling matters: the mean of a BatchNorm's output over its group is beta.
    h = b.reshape(b.global_avg_pool(h), {batch, 8});
    const TensorId logits = b.linear(h, b.parameter("fc.weight", {kClasses, 8}), b.parameter("fc.bias", {kClasses}));
    targets = b.input("targets", {batch}, DType::kInt32);
    loss = b.softmax_cross_entropy(logits, targets, 0.0, -1);
    append_backward(graph, loss);
    plan = plan_memory(graph);
    executor = std::make_unique<CpuExecutor>(graph, plan);
  }

  // Samples first .. first + batch - 1 of the test's dataset; sample s's pixels are offset by 0.4 s, so that
  // every rank's BatchNorm statistics differ clearly from the whole batch's.
  void write_samples(int64_t first) {
    const int64_t batch = graph.tensor(x).shape[0], pixels = kImage * kImage * kInChannels;
    std::vector<float> images;
    std::vector<int32_t> labels;
    for (int64_t s = first; s < first + batch; ++s) {
      std::vector<float> image = test::random_normal(size_t(pixels), uint32_t(100 + s));
      for (float& v : image) v += 0.4f * float(s);
      images.insert(images.end(), image.begin(), image.end());
      labels.push_back(int32_t(s % kClasses));
    }
    executor->write_tensor(x, images.data(), images.size() * sizeof(float));
    executor->write_tensor(targets, labels.data(), labels.size() * sizeof(int32_t));
  }

  // Every parameter drawn by name: the same weights in every graph. Norm gains near 1, biases near 0.
  void write_parameters() {
    for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
      const TensorInfo& info = graph.tensor(p);
      const bool gain = info.name.find("norm.weight") != std::string::npos;
      const auto seed = static_cast<uint32_t>(std::hash<std::string>{}(info.name));
      std::vector<float> values = test::random_normal(size_t(info.elements()), seed, gain ? 0.1f : 0.3f);
      if (gain) {
        for (float& v : values) v += 1.0f;
      }
      executor->write_tensor(p, values.data(), info.bytes());
    }
  }

  float* gradients() {
    return reinterpret_cast<float*>(static_cast<unsigned char*>(executor->arena_data()) + plan.gradient_region_offset);
  }
  size_t gradient_count() const { return plan.gradient_bytes / sizeof(float); }
  std::vector<float> read(const std::string& name) {
    const TensorInfo& info = graph.tensor(graph.find_tensor(name));
    std::vector<float> values(size_t(info.elements()));
    executor->read_tensor(graph.find_tensor(name), values.data(), info.bytes());
    return values;
  }
};

// --check's update rule (dp_check.cpp): SGD with momentum, no weight decay, no clipping; a larger rate so that
// k steps move the weights well away from the start.
OptimizerSettings sgd() {
  OptimizerSettings settings = default_optimizer(OptimizerKind::kSgdMomentum);
  settings.learning_rate = 0.05f;
  settings.weight_decay = 0;
  settings.max_grad_norm = 0;
  return settings;
}

// Every rank's gradient region replaced by the mean over the ranks (in double, rank order): the all-reduce.
void average_gradients(std::vector<std::unique_ptr<TinyCnn>>& ranks) {
  const size_t count = ranks[0]->gradient_count();
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (auto& rank : ranks) sum += rank->gradients()[i];
    for (auto& rank : ranks) rank->gradients()[i] = float(sum / double(ranks.size()));
  }
}

std::vector<float> all_parameters(TinyCnn& model) {
  std::vector<float> values;
  for (TensorId p : model.graph.tensors_with_role(TensorRole::kParameter)) {
    const std::vector<float> one = model.read(model.graph.tensor(p).name);
    values.insert(values.end(), one.begin(), one.end());
  }
  return values;
}

struct RunResult {
  double gradient_error = 0;  // after the first backward pass
  double update_error = 0;    // --check's ||Δp(N) - Δp(1)|| / ||Δp(1)|| after kSteps steps
  bool ranks_identical = false;
  std::vector<float> rank0_running_mean, reference_running_mean;
};

// kSteps steps of `ranks` ranks with batch `batch` each against one reference of batch ranks · batch whose
// BatchNorms have `reference_groups` statistics groups.
RunResult run(int64_t ranks, int64_t batch, int64_t reference_groups) {
  std::vector<std::unique_ptr<TinyCnn>> models;
  for (int64_t r = 0; r < ranks; ++r) {
    models.push_back(std::make_unique<TinyCnn>(batch, 1));
    models.back()->write_samples(r * batch);
    models.back()->write_parameters();
  }
  TinyCnn reference(ranks * batch, reference_groups);
  reference.write_samples(0);
  reference.write_parameters();
  const std::vector<float> initial = all_parameters(reference);
  EXPECT_EQ(initial, all_parameters(*models[0]));
  EXPECT_EQ(reference.gradient_count(), models[0]->gradient_count());

  RunResult result;
  for (int step = 1; step <= kSteps; ++step) {
    for (auto& model : models) model->executor->run();
    average_gradients(models);
    reference.executor->run();
    if (step == 1) {
      const std::vector<float> averaged(models[0]->gradients(), models[0]->gradients() + models[0]->gradient_count());
      const std::vector<float> single(reference.gradients(), reference.gradients() + reference.gradient_count());
      result.gradient_error = relative_l2(averaged, single);
    }
    for (auto& model : models) model->executor->optimizer_step(sgd(), step);
    reference.executor->optimizer_step(sgd(), step);
  }
  const std::vector<float> data_parallel = all_parameters(*models[0]), single = all_parameters(reference);
  result.ranks_identical = true;
  for (auto& model : models) result.ranks_identical = result.ranks_identical && all_parameters(*model) == data_parallel;
  std::vector<float> update_dp(initial.size()), update_single(initial.size());
  for (size_t i = 0; i < initial.size(); ++i) {
    update_dp[i] = data_parallel[i] - initial[i];
    update_single[i] = single[i] - initial[i];
  }
  result.update_error = relative_l2(update_dp, update_single);
  result.rank0_running_mean = models[0]->read("block0.norm.weight.running_mean");
  result.reference_running_mean = reference.read("block0.norm.weight.running_mean");
  return result;
}

struct Layout {
  int64_t ranks, batch;
};

class BatchNormDataParallel : public ::testing::TestWithParam<Layout> {};

TEST_P(BatchNormDataParallel, RanksEqualOneBatchWithAStatisticsGroupPerRank) {
  const Layout layout = GetParam();
  const RunResult grouped = run(layout.ranks, layout.batch, layout.ranks);
  EXPECT_TRUE(grouped.ranks_identical);
  EXPECT_LE(grouped.gradient_error, kGradientTolerance);
  EXPECT_LE(grouped.update_error, check_tolerance(Precision::kFp32, DType::kFloat32));
  EXPECT_LE(grouped.update_error, kGradientTolerance * 10) << "k steps compound the first step's rounding";
  // Running statistics follow group 0 = rank 0's batch (src/cpu/batchnorm.h); measured bit-identical.
  for (size_t c = 0; c < grouped.rank0_running_mean.size(); ++c) {
    EXPECT_NEAR(grouped.reference_running_mean[c], grouped.rank0_running_mean[c],
                1e-6 * (1 + std::fabs(grouped.rank0_running_mean[c])));
  }

  const RunResult whole_batch = run(layout.ranks, layout.batch, 1);  // what --check compared before the groups
  EXPECT_GT(whole_batch.gradient_error, 100 * kGradientTolerance);
  EXPECT_GT(whole_batch.update_error, check_tolerance(Precision::kFp32, DType::kFloat32))
      << "the reference without groups passes --check: the test cannot tell the groups' effect";
}

INSTANTIATE_TEST_SUITE_P(Layouts, BatchNormDataParallel,
                         ::testing::Values(Layout{2, 3}, Layout{4, 1}),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           return std::to_string(info.param.ranks) + "ranks_batch" + std::to_string(info.param.batch);
                         });

// ReplicaOptions::batchnorm_groups reaches the builder; a workload without BatchNorm builds the same graph with
// it (bert_base: every node, its attributes and the plan's size).
TEST(BatchNormDataParallelReplica, GroupsLeaveAGraphWithoutBatchNormUnchanged) {
  ReplicaOptions options;
  options.workload = "bert_base";
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.dropout = false;
  const std::unique_ptr<Replica> plain = plan_replica(options);
  options.batchnorm_groups = 2;
  const std::unique_ptr<Replica> grouped = plan_replica(options);
  ASSERT_EQ(plain->graph.nodes().size(), grouped->graph.nodes().size());
  for (size_t i = 0; i < plain->graph.nodes().size(); ++i) {
    EXPECT_EQ(plain->graph.nodes()[i].op, grouped->graph.nodes()[i].op) << "node " << i;
    EXPECT_EQ(plain->graph.nodes()[i].attributes, grouped->graph.nodes()[i].attributes) << "node " << i;
  }
  EXPECT_EQ(plain->plan.total_bytes, grouped->plan.total_bytes);
  options.batchnorm_groups = 0;
  EXPECT_THROW(plan_replica(options), UsageError);
}

}  // namespace
}  // namespace sb
