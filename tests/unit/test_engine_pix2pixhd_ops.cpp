// The GAN ops added for pix2pixHD through the graph on the CPU device: GraphBuilder's checks and shapes;
// finite-difference gradients of small graphs (reflection pad -> conv -> instance norm -> ReLU -> transposed conv
// with bias -> tanh, then the LSGAN and L1 losses in a weighted sum); stop_gradient and discard_gradient (what
// autodiff computes, and that no gradient passes them); frozen weights (inputs, counted apart, never a gradient).
// Run: unit_tests --gtest_filter='EnginePix2PixHD*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "src/cpu/instance_norm.h"
#include "tests/support/tensor_compare.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

int count_ops(const Graph& graph, const std::string& op, bool backward) {
  int count = 0;
  for (const Node& node : graph.nodes()) count += node.op == op && node.backward == backward;
  return count;
}

TEST(EnginePix2PixHD, InstanceNormNodeGivesTheKernelsResult) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 3, 4, 5}, 2.0f, 1.0f);
  const TensorId y = t.b.instance_norm(x, 1e-5);
  t.finish(y, {y});
  t.e->run();
  std::vector<float> want(2 * 3 * 4 * 5), mean(10), invstd(10);
  cpu::instance_norm_forward(t.values(x).data(), want.data(), mean.data(), invstd.data(), 2, 12, 5, 1e-5f);
  EXPECT_EQ(t.read(y), want);
}

// The loss L = mse(D(stop_gradient(G(z))), 0) + mse(D'(G(z)), 1) where D' reads D's weights through
// stop_gradient: D's gradient is that of the first term alone, G's that of the second alone. Each is compared
// with finite differences of the one term it must follow.
TEST(EnginePix2PixHD, StopGradientSplitsTheTwoPlayersLosses) {
  test::OpGraph t;
  GraphBuilder& b = t.b;
  const TensorId z = t.parameter("z", {2, 3, 3, 2});
  const TensorId g_weight = t.parameter("g.weight", {2, 3, 3, 2}, 0.5f);
  const TensorId d_weight = t.parameter("d.weight", {1, 3, 3, 2}, 0.5f);
  const TensorId fake = b.tanh(b.conv2d(z, g_weight, kNoTensor, Conv2dOptions::with(1, 1)));
  auto discriminator = [&](TensorId image, TensorId weight) {
    return b.conv2d(image, weight, kNoTensor, Conv2dOptions::with(1, 1));
  };
  const TensorId d_loss = b.mse_loss(discriminator(b.stop_gradient(fake), d_weight), 0.0);
  const TensorId g_loss = b.mse_loss(discriminator(fake, b.stop_gradient(d_weight)), 1.0);
  t.finish_with_loss(b.add_losses(d_loss, g_loss));
  // Into G's output from the G-loss pass and into z from G's conv; none for the D-loss pass's detached input.
  EXPECT_EQ(count_ops(t.graph, "conv2d_backward_data", true), 2);
  EXPECT_EQ(count_ops(t.graph, "conv2d_backward_filter", true), 2) << "d.weight (D loss) and g.weight";
  t.write_parameters();
  t.e->run();
  const std::vector<float> d_gradient = t.read(t.gradients.at(d_weight));
  const std::vector<float> g_gradient = t.read(t.gradients.at(g_weight));
  ASSERT_EQ(t.gradients.count(z), 1u);
  auto term = [&](TensorId loss) {
    return [&t, loss] {
      t.forward_loss();
      return double(*t.e->f32(loss));
    };
  };
  std::vector<float>& dv = t.values(d_weight);
  const test::GradientComparison d = test::compare_with_finite_differences(dv, term(d_loss), d_gradient, 1e-3, true);
  EXPECT_LE(d.relative_error, test::kOpGraphGradientTolerance) << d.describe();
  std::vector<float>& gv = t.values(g_weight);
  const test::GradientComparison g = test::compare_with_finite_differences(gv, term(g_loss), g_gradient, 1e-3, true);
  EXPECT_LE(g.relative_error, test::kOpGraphGradientTolerance) << g.describe();
  EXPECT_GT(g.analytic_norm, 1e-6);
  // And the other term does move each of them: the stop is what keeps it out.
  const test::GradientComparison d_other =
      test::compare_with_finite_differences(dv, term(g_loss), d_gradient, 1e-3, true);
  EXPECT_GT(d_other.relative_error, 0.1);
}

// discard_gradient: the weight gradient of that use is computed (a backward-filter node writes it) and dropped;
// the parameter's gradient is that of its other use alone.
TEST(EnginePix2PixHD, DiscardGradientComputesAndDropsTheWeightGradient) {
  auto build = [](test::OpGraph& t, bool discard) {
    GraphBuilder& b = t.b;
    const TensorId x = t.parameter("x", {1, 4, 4, 2});
    const TensorId w = t.parameter("w", {2, 3, 3, 2}, 0.5f);
    const TensorId first = b.conv2d(x, w, kNoTensor, Conv2dOptions::with(1, 1));
    const TensorId second = b.conv2d(b.tanh(first), discard ? b.discard_gradient(w) : b.stop_gradient(w), kNoTensor,
                                     Conv2dOptions::with(1, 1));
    t.finish_with_loss(b.mse_loss(second, 0.5));
  };
  test::OpGraph discarded, stopped;
  build(discarded, true);
  build(stopped, false);
  EXPECT_EQ(count_ops(discarded.graph, "conv2d_backward_filter", true), 2);
  EXPECT_EQ(count_ops(stopped.graph, "conv2d_backward_filter", true), 1);
  discarded.e->run();
  stopped.e->run();
  const TensorId w = discarded.graph.find_tensor("w");
  EXPECT_EQ(discarded.read(discarded.gradients.at(w)), stopped.read(stopped.gradients.at(stopped.graph.find_tensor("w"))));
  EXPECT_GT(test::l2_norm(discarded.read(discarded.gradients.at(w))), 0.0);
}

// A pass over data and frozen weights alone (the VGG features of the real image) needs no backward node even
// though the loss reads it; the pass over a trained tensor gets input gradients but no weight gradient.
TEST(EnginePix2PixHD, FrozenWeightsAndDataGetNoBackwardPass) {
  test::OpGraph t;
  GraphBuilder& b = t.b;
  const TensorId real = b.input("real", {1, 4, 4, 2});
  const TensorId frozen = b.frozen_parameter("vgg.weight", {3, 3, 3, 2});
  const TensorId fake = b.tanh(t.parameter("fake", {1, 4, 4, 2}));
  auto features = [&](TensorId image) { return b.relu(b.conv2d(image, frozen, kNoTensor, Conv2dOptions::with(1, 1))); };
  const TensorId loss = b.l1_loss(features(fake), b.stop_gradient(features(real)));
  t.gradients = append_backward(t.graph, loss);
  EXPECT_EQ(count_ops(t.graph, "conv2d_backward_data", true), 1);
  EXPECT_EQ(count_ops(t.graph, "conv2d_backward_filter", true), 0);
  EXPECT_EQ(count_ops(t.graph, "relu_backward", true), 1);
  EXPECT_EQ(t.gradients.size(), 1u);
  for (const Node& node : t.graph.nodes()) {
    if (node.op == "l1_loss_backward") {
      EXPECT_EQ(node.outputs.size(), 1u) << "no gradient for the detached target";
    }
  }
}

}  // namespace
}  // namespace sb
