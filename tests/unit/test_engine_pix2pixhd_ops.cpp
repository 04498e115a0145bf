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

TEST(EnginePix2PixHD, BuilderShapesAndChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 8, 16, 4});
  EXPECT_EQ(graph.tensor(b.reflection_pad2d(x, 3, 3, 3, 3)).shape, (std::vector<int64_t>{2, 14, 22, 4}));
  EXPECT_THROW(b.reflection_pad2d(x, 8, 0, 0, 0), UsageError);  // as wide as the image
  EXPECT_THROW(b.reflection_pad2d(x, -1, 0, 0, 0), UsageError);
  const std::vector<int64_t> x_shape = graph.tensor(x).shape;  // (tensor references move as the graph grows)
  EXPECT_EQ(graph.tensor(b.instance_norm(x, 1e-5)).shape, x_shape);
  EXPECT_THROW(b.instance_norm(b.input("one_pixel", {2, 1, 1, 4}), 1e-5), UsageError);
  EXPECT_THROW(b.instance_norm(x, 0.0), UsageError);
  // pix2pixHD's ConvTranspose2d(4, 3, k 3, stride 2, padding 1, output_padding 1): 8 x 16 -> 16 x 32.
  const TensorId w = b.parameter("w", {4, 3, 3, 3});
  const TensorId up = b.conv_transpose2d(x, w, b.parameter("bias", {3}), Conv2dOptions::with(2, 1), 1);
  EXPECT_EQ(graph.tensor(up).shape, (std::vector<int64_t>{2, 16, 32, 3}));
  EXPECT_EQ(graph.nodes().back().attributes.at("matmul_flops"), 2.0 * 2 * 8 * 16 * 4 * 9 * 3);  // input x C_out x k²
  EXPECT_EQ(graph.tensor(b.conv_transpose2d(x, w, kNoTensor, Conv2dOptions::with(2, 1), 0)).shape,
            (std::vector<int64_t>{2, 15, 31, 3}));
  EXPECT_THROW(b.conv_transpose2d(x, w, kNoTensor, Conv2dOptions::with(2, 1), 2), UsageError);  // >= stride
  EXPECT_THROW(b.conv_transpose2d(x, b.parameter("w_wrong", {3, 3, 3, 4}), kNoTensor, Conv2dOptions::with(2, 1), 1),
               UsageError);
  Conv2dOptions asymmetric = Conv2dOptions::with(2, 1);
  asymmetric.pad_bottom = 0;
  EXPECT_THROW(b.conv_transpose2d(x, w, kNoTensor, asymmetric, 1), UsageError);
  EXPECT_THROW(b.l1_loss(x, b.input("other", {2, 8, 16, 3})), UsageError);
  const TensorId sg = b.stop_gradient(x);
  EXPECT_EQ(graph.tensor(sg).view_of, x) << "the forward pass is a view";
  const TensorId frozen = b.frozen_parameter("vgg.weight", {8, 3, 3, 4});
  EXPECT_EQ(graph.tensor(frozen).role, TensorRole::kInput);
  EXPECT_EQ(graph.frozen_parameter_count(), 8 * 3 * 3 * 4);
  EXPECT_EQ(graph.parameter_count(), 4 * 3 * 3 * 3 + 3 + 3 * 3 * 3 * 4);
  b.disable_gradient_scaling();
  EXPECT_EQ(b.stop_gradient(x), x);
  EXPECT_EQ(b.discard_gradient(x), x);
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

// pix2pixHD's generator pieces at toy size: reflection pad 1 and a 3 x 3 conv with bias, instance norm, tanh
// (smooth where pix2pixHD has ReLU: the loss is a mean over 320 elements, so its gradients are small next to the
// fp32 loss's rounding at h = 1e-3 and the smooth step 1e-2 is used), a stride-2 transposed conv with bias,
// tanh; the loss is LSGAN's squared error against 1 plus 0.7 times an
// L1 distance to a second trained tensor (both operands get gradients: weighted loss seeds). That tensor lies
// around 3, away from tanh's range, so no |y - other| is within a finite-difference step of its kink.
TEST(EnginePix2PixHD, GeneratorPiecesGradientsMatchFiniteDifferences) {
  test::OpGraph t;
  GraphBuilder& b = t.b;
  const TensorId x = t.parameter("x", {2, 4, 5, 3});
  TensorId h = b.conv2d(b.reflection_pad2d(x, 1, 1, 1, 1), t.parameter("conv.weight", {4, 3, 3, 3}, 0.5f),
                        t.parameter("conv.bias", {4}), Conv2dOptions{});
  h = b.tanh(b.instance_norm(h, 1e-5));
  const TensorId y = b.tanh(b.conv_transpose2d(h, t.parameter("up.weight", {4, 3, 3, 2}, 0.5f),
                                               t.parameter("up.bias", {2}), Conv2dOptions::with(2, 1), 1));
  ASSERT_EQ(t.graph.tensor(y).shape, (std::vector<int64_t>{2, 8, 10, 2}));
  const TensorId other = t.parameter("other", {2, 8, 10, 2}, 0.3f, 3.0f);
  t.finish_with_loss(b.add_losses(b.mse_loss(y, 1.0), b.l1_loss(y, other), 0.7));
  // The conv bias before an instance norm cancels: its gradient is 0 in exact arithmetic.
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep,
                           {t.graph.find_tensor("conv.bias")});
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

// Weights shared by name (a second parameter() returns the first: unsupmt's generation and training passes) in
// a model with parameter groups and frozen weights (pix2pixHD's G, D and VGG): D's weight, declared again for its
// second pass, is one parameter of group D whose gradient sums both uses; declaring it again in another group is
// refused; the frozen weight between the two passes gets no gradient; the planner's buckets keep G and D apart.
TEST(EnginePix2PixHD, SharedWeightsKeepTheirGroupBesideFrozenWeights) {
  test::OpGraph t;
  GraphBuilder& b = t.b;
  b.set_parameter_group("G");
  const TensorId z = t.parameter("z", {2, 4});
  const TensorId fake = b.tanh(b.linear(z, t.parameter("g.weight", {4, 4}, 0.5f), kNoTensor));
  b.set_parameter_group("D");
  const TensorId d = t.parameter("d.weight", {4, 4}, 0.5f);
  const TensorId frozen = b.frozen_parameter("f.weight", {4, 4});
  const TensorId first = b.tanh(b.linear(fake, d, kNoTensor));
  const TensorId d_again = b.parameter("d.weight", {4, 4});
  EXPECT_EQ(d_again, d);
  b.set_parameter_group("G");
  EXPECT_THROW(b.parameter("d.weight", {4, 4}), UsageError);  // one weight, one optimizer
  b.set_parameter_group("");
  const TensorId second = b.linear(b.tanh(b.linear(first, frozen, kNoTensor)), d_again, kNoTensor);
  EXPECT_EQ(t.graph.parameter_count(), 2 * 4 + 16 + 16);
  EXPECT_EQ(t.graph.frozen_parameter_count(), 16);
  EXPECT_EQ(t.graph.tensor(d).parameter_group, "D");
  t.finish(second);
  EXPECT_EQ(t.gradients.size(), 3u);  // z, g.weight, d.weight; none for the frozen weight
  EXPECT_EQ(t.gradients.count(frozen), 0u);
  const std::vector<float> frozen_values = test::random_normal(16, 99, 0.5f);
  std::memcpy(t.e->f32(frozen), frozen_values.data(), frozen_values.size() * sizeof(float));
  t.expect_gradients_match();  // d.weight's finite differences move both of its uses

  ASSERT_EQ(t.plan.gradient_order.size(), 3u);
  auto group_of = [&](size_t i) { return t.graph.tensor(t.graph.tensor(t.plan.gradient_order[i]).gradient_of).parameter_group; };
  std::map<std::string, int> buckets_per_group;
  for (const GradientBucket& bucket : t.plan.buckets) {
    const std::string group = group_of(bucket.first);
    for (size_t i = bucket.first; i <= bucket.last; ++i) EXPECT_EQ(group_of(i), group);
    ++buckets_per_group[group];
  }
  EXPECT_EQ(buckets_per_group, (std::map<std::string, int>{{"D", 1}, {"G", 1}}));  // all fit one 25 MB bucket else
}

}  // namespace
}  // namespace sb
