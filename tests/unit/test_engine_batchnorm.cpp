// BatchNorm, LeakyReLU and sigmoid through the graph on the CPU device: the builder's checks, running
// statistics as kState tensors (initialised by the executor to 0 and 1, updated by every forward pass, no
// gradient, planned outside the activations), and finite-difference gradients through autodiff of conv → BN
// with each fused activation, of two conv+BN blocks followed by LeakyReLU and sigmoid, and of BNs with
// statistics groups (GraphBuilder::set_batchnorm_groups) and the builder's checks of them; the rewrite of fused
// activations into the identity (make_batchnorm_activations_linear).
// Run: unit_tests --gtest_filter='EngineBatchNorm*'.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "src/cpu/batchnorm.h"
#include "src/core/ops/batchnorm.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

BatchNormOptions fused(BatchNormOptions::Activation act, double epsilon = 1e-3) {
  BatchNormOptions o;
  o.activation = act;
  o.epsilon = epsilon;
  return o;
}

TEST(EngineBatchNorm, BuilderChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 4, 4, 6});
  EXPECT_THROW(b.batchnorm(x, b.parameter("g0", {5}), b.parameter("b0", {6})), UsageError);
  EXPECT_THROW(b.batchnorm(b.input("one", {1, 6}), b.parameter("g1", {6}), b.parameter("b1", {6})), UsageError);
  BatchNormOptions flat = fused(BatchNormOptions::Activation::kLeakyRelu);
  flat.slope = 0;
  EXPECT_THROW(b.batchnorm(x, b.parameter("g2", {6}), b.parameter("b2", {6}), flat), UsageError);
  EXPECT_THROW(b.leaky_relu(x, -0.1), UsageError);
}

// make_batchnorm_activations_linear: a fused ReLU or LeakyReLU becomes LeakyReLU with slope 1 (the identity), a
// BatchNorm without activation and a standalone LeakyReLU stay as they are, and the count says how many changed.
TEST(EngineBatchNorm, FusedActivationsMadeLinear) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 3, 3, 4});
  const TensorId gamma = b.parameter("bn.gamma", {4}), beta = b.parameter("bn.beta", {4});
  b.batchnorm(x, gamma, beta, fused(BatchNormOptions::Activation::kRelu));
  b.batchnorm(x, gamma, beta, fused(BatchNormOptions::Activation::kLeakyRelu));
  b.leaky_relu(b.batchnorm(x, gamma, beta), 0.2);
  EXPECT_EQ(make_batchnorm_activations_linear(graph), 2);
  std::vector<std::pair<double, double>> batchnorms;  // (activation, slope)
  for (const Node& node : graph.nodes()) {
    if (node.op == "batchnorm") batchnorms.emplace_back(node.attributes.at("activation"), node.attributes.at("slope"));
    if (node.op == "leaky_relu") EXPECT_EQ(node.attributes.at("slope"), 0.2);
  }
  const double leaky = double(BatchNormOptions::Activation::kLeakyRelu);
  EXPECT_EQ(batchnorms, (std::vector<std::pair<double, double>>{{leaky, 1.0}, {leaky, 1.0}, {0.0, 0.1}}));
}

// set_batchnorm_groups applies to the batchnorm nodes after it: recorded as the node's "groups", the saved
// statistics (groups, C) and the workspace sized for the groups; the batch must divide into groups of more than
// one value per channel.
TEST(EngineBatchNorm, StatisticsGroupsAreANodeAttributeOfLaterNodes) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {6, 2, 2, 4});
  b.batchnorm(x, b.parameter("g0", {4}), b.parameter("b0", {4}));
  EXPECT_THROW(b.set_batchnorm_groups(0), UsageError);
  b.set_batchnorm_groups(3);
  b.batchnorm(x, b.parameter("g1", {4}), b.parameter("b1", {4}));
  EXPECT_THROW(b.batchnorm(b.input("odd", {4, 2, 2, 4}), b.parameter("g2", {4}), b.parameter("b2", {4})), UsageError)
      << "a batch of 4 in 3 groups";
  EXPECT_THROW(b.batchnorm(b.input("flat", {3, 4}), b.parameter("g3", {4}), b.parameter("b3", {4})), UsageError)
      << "one value per channel in each group";
  std::vector<int64_t> forward_groups;
  for (const Node& node : graph.nodes()) {
    if (node.op == "batchnorm") {
      forward_groups.push_back(static_cast<int64_t>(node.attributes.at("groups")));
      const int64_t groups = forward_groups.back();
      EXPECT_EQ(graph.tensor(node.outputs[1]).shape, (std::vector<int64_t>{groups, 4})) << "saved mean";
      EXPECT_EQ(graph.tensor(node.outputs[2]).shape, (std::vector<int64_t>{groups, 4})) << "saved invstd";
      EXPECT_EQ(graph.tensor(node.outputs[3]).bytes(), uint64_t(batchnorm_workspace_bytes(24, 4, groups)));
    }
  }
  EXPECT_EQ(forward_groups, (std::vector<int64_t>{1, 3}));
}

TEST(EngineBatchNorm, RunningStatisticsAreStateUpdatedEachForward) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {3, 2, 2, 4}, 2.0f, 1.0f);
  const TensorId gamma = t.parameter("bn.gamma", {4}, 0.1f, 1.0f);
  const TensorId y = t.b.batchnorm(x, gamma, t.parameter("bn.beta", {4}, 0.1f));
  t.finish(y);
  const TensorId rm = t.graph.find_tensor("bn.gamma.running_mean"), rv = t.graph.find_tensor("bn.gamma.running_var");
  EXPECT_EQ(t.graph.tensor(rm).role, TensorRole::kState);
  EXPECT_EQ(t.gradients.size(), 3u) << "x, gamma, beta; no gradient for running statistics";
  EXPECT_EQ(t.plan.state_bytes, 256u + 16u) << "two (4) fp32 tensors, the second aligned to 256 bytes";
  EXPECT_EQ(t.read(rm), std::vector<float>(4, 0.0f));
  EXPECT_EQ(t.read(rv), std::vector<float>(4, 1.0f));
  t.e->run();
  t.e->run();
  // Two forward passes on the same batch: running = (1 - 0.9²) · batch statistic (+ 0.9² · 1 for the variance).
  const std::vector<float>& xs = t.values(x);
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0, sq = 0;
    for (int64_t r = 0; r < 12; ++r) sum += xs[r * 4 + c];
    for (int64_t r = 0; r < 12; ++r) sq += (xs[r * 4 + c] - sum / 12) * (xs[r * 4 + c] - sum / 12);
    EXPECT_NEAR(t.read(rm)[c], 0.19 * sum / 12, 1e-5);
    EXPECT_NEAR(t.read(rv)[c], 0.81 + 0.19 * sq / 11, 1e-5);
  }
}

// Finite differences step over ReLU kinks when many pre-activations sit near 0 (every BN output moves when any
// input does, through the batch statistics); pooling each image to one row keeps the gradients above the
// loss's rounding noise at h = 1e-2, and with these seeds no kink lies within the steps' reach.
class EngineBatchNormFused : public ::testing::TestWithParam<BatchNormOptions::Activation> {};

TEST_P(EngineBatchNormFused, GradientsMatchFiniteDifferences) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 5, 3});
  TensorId h = t.b.conv2d(x, t.parameter("w0", {6, 3, 3, 3}, 0.4f), kNoTensor, Conv2dOptions::same_padding());
  h = t.b.batchnorm(h, t.parameter("bn.gamma", {6}, 0.2f, 1.0f), t.parameter("bn.beta", {6}, 0.2f), fused(GetParam()));
  t.finish(t.b.global_avg_pool(h));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);
}

INSTANTIATE_TEST_SUITE_P(Activations, EngineBatchNormFused,
                         ::testing::Values(BatchNormOptions::Activation::kNone, BatchNormOptions::Activation::kRelu,
                                           BatchNormOptions::Activation::kLeakyRelu));

// Statistics groups through autodiff: three groups of two images (the backward node reads the groups from the
// attributes it copies), then two groups of three images after a stride-2 convolution (3 x 3 pixels each). Not
// one image per group before the pooling: a BatchNorm's output averages to beta over its group. Smooth (sigmoid
// between the blocks, as above): the fused activations with groups are checked in test_cpu_batchnorm.cpp.
TEST(EngineBatchNorm, GradientsMatchFiniteDifferencesWithStatisticsGroups) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {6, 5, 5, 3});
  t.b.set_batchnorm_groups(3);
  TensorId h = t.b.conv2d(x, t.parameter("w0", {6, 3, 3, 3}, 0.4f), kNoTensor, Conv2dOptions::same_padding());
  h = t.b.batchnorm(h, t.parameter("bn0.gamma", {6}, 0.2f, 1.0f), t.parameter("bn0.beta", {6}, 0.2f), fused({}));
  t.b.set_batchnorm_groups(2);
  h = t.b.conv2d(t.b.sigmoid(h), t.parameter("w1", {4, 3, 3, 6}, 0.4f), kNoTensor, Conv2dOptions::same_padding(2));
  h = t.b.batchnorm(h, t.parameter("bn1.gamma", {4}, 0.2f, 1.0f), t.parameter("bn1.beta", {4}, 0.2f), fused({}));
  t.finish(t.b.sigmoid(t.b.global_avg_pool(h)));
  std::vector<int64_t> backward_groups;
  for (const Node& node : t.graph.nodes()) {
    if (node.op == "batchnorm_backward") backward_groups.push_back(int64_t(node.attributes.at("groups")));
  }
  EXPECT_EQ(backward_groups, (std::vector<int64_t>{2, 3}));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);
}

TEST(EngineBatchNorm, GradientsMatchFiniteDifferencesThroughTwoBlocksAndActivations) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 5, 3});
  TensorId h = t.b.conv2d(x, t.parameter("w0", {6, 3, 3, 3}, 0.4f), kNoTensor, Conv2dOptions::same_padding());
  h = t.b.batchnorm(h, t.parameter("bn0.gamma", {6}, 0.2f, 1.0f), t.parameter("bn0.beta", {6}, 0.2f), fused({}));
  h = t.b.conv2d(t.b.sigmoid(h), t.parameter("w1", {4, 1, 1, 6}, 0.4f));  // sigmoid: bn0.beta is no shift bn1 removes
  h = t.b.batchnorm(h, t.parameter("bn1.gamma", {4}, 0.2f, 1.0f), t.parameter("bn1.beta", {4}, 0.2f), fused({}));
  t.finish(t.b.sigmoid(t.b.leaky_relu(t.b.global_avg_pool(h), 0.2)));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);
}

}  // namespace
}  // namespace sb
