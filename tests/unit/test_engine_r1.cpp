// The R1 penalty's double backward through the engine (autodiff.h: append_input_gradient, then append_backward):
// a tiny StyleGAN discriminator on the CPU device with every op on D's path (equalized-lr weight scales, 1 x 1
// and 3 x 3 convs with bias, LeakyReLU 0.2, the fixed blur, the fused 4 x 4 stride-2 down conv, a 3 x 3 conv
// then 2 x 2 average pool, minibatch stddev, dense layers). Checked: the input gradient against finite
// differences of sum D(x) in x, and the gradient of softplus(-D(x)) + 5 ||dD/dx||² (and of the R1 term alone)
// in every weight against finite differences of the whole loss. Elements whose perturbation moves a LeakyReLU
// input across zero are left out everywhere (the signs are read after a forward-only run: the backward pass
// reuses some forward outputs' memory). Run: unit_tests --gtest_filter='EngineR1*'.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

constexpr double kSlope = 0.2;
// Richardson-extrapolated central differences of an fp32 loss: ~1e-4 relative noise at this step; a missing
// or wrong second-order term is off by O(1). Elements whose perturbation moves a LeakyReLU input across zero
// are left out (the input gradient jumps there, so R1 is discontinuous): at most a few percent of them.
constexpr double kStep = 3e-3;
constexpr double kTolerance = 1e-2;
// The score sum's input gradient: elements of ~3e-3 whose fp32 rounding noise at kStep is ~1%; the larger step
// (kinks still left out) keeps it at ~0.1%.
constexpr double kSmoothStep = 1e-2;

struct TinyDiscriminator {
  test::OpGraph t;
  TensorId x = kNoTensor, scores = kNoTensor, input_gradient = kNoTensor;
  std::vector<float> images;

  // Equalized learning rate: the stored weight times He's constant sqrt(2 / fan_in) at run time (gain sqrt(2)).
  TensorId weight(const std::string& name, std::vector<int64_t> shape, int64_t fan_in) {
    return t.b.scale(t.parameter(name, std::move(shape)), std::sqrt(2.0 / double(fan_in)));
  }
  // A bias (offset 0.3 std so that few pre-activations sit near a kink), or none.
  TensorId bias(const std::string& name, int64_t channels) { return t.parameter(name, {channels}, 0.3f); }
  TensorId conv(TensorId h, const std::string& name, int64_t out, int64_t k, int64_t in) {
    return t.b.leaky_relu(t.b.conv2d(h, weight(name, {out, k, k, in}, k * k * in), bias(name + ".bias", out),
                                     Conv2dOptions::with(1, k / 2)),
                          kSlope);
  }

  // x (4, 8, 8, 3) -> scores (4, 1). `final_bias` false: the last dense layer without the bias that only shifts
  // the scores (R1 alone does not read it at all).
  explicit TinyDiscriminator(bool final_bias) {
    const int64_t c = 4;
    x = t.b.input("images", {4, 8, 8, 3});
    images = test::random_normal(4 * 8 * 8 * 3, 900);
    TensorId h = conv(x, "fromrgb", c, 1, 3);
    h = conv(h, "b8.conv0", c, 3, c);  // 8 x 8: fused down conv (res >= 128 in the real D)
    h = t.b.blur2d(h);
    const TensorId w4 = t.b.fused_conv_weight(weight("b8.conv1_down", {c, 3, 3, c}, 9 * c), true);
    h = t.b.leaky_relu(t.b.conv2d(h, w4, bias("b8.conv1_down.bias", c), Conv2dOptions::with(2, 1)), kSlope);
    h = conv(h, "b4.conv0", c, 3, c);  // 4 x 4: conv, blur, conv, average pool (res <= 64)
    h = t.b.blur2d(h);
    h = t.b.conv2d(h, weight("b4.conv1", {c, 3, 3, c}, 9 * c), kNoTensor, Conv2dOptions::with(1, 1));
    h = t.b.avg_pool2d(h, 2, Conv2dOptions::with(2, 0), true);
    h = t.b.leaky_relu(t.b.add_broadcast(h, bias("b4.conv1.bias", c)), kSlope);
    h = t.b.minibatch_stddev(h, 4);  // 2 x 2 x 5
    h = conv(h, "final.conv", c, 3, c + 1);
    h = t.b.reshape(h, {4, 2 * 2 * c});
    h = t.b.leaky_relu(t.b.linear(h, weight("final.dense0", {c, 4 * c}, 4 * c), bias("final.dense0.bias", c)), kSlope);
    scores = t.b.linear(h, weight("final.dense1", {1, c}, c), final_bias ? bias("final.dense1.bias", 1) : kNoTensor);
    input_gradient = append_input_gradient(t.graph, scores, x);
  }
  void finish(TensorId loss) {
    t.graph.tensor(scores).read_after_step = true;
    t.graph.tensor(input_gradient).read_after_step = true;
    t.finish_with_loss(loss);
    write_images();
  }
  void write_images() { std::memcpy(t.e->f32(x), images.data(), images.size() * sizeof(float)); }

  // Signs of every forward LeakyReLU output after the forward pass.
  std::vector<bool> leaky_signs() {
    std::vector<bool> signs;
    for (const Node& node : t.graph.nodes()) {
      if (node.op != "leaky_relu") continue;
      for (float v : t.read(node.outputs[0])) signs.push_back(v > 0);
    }
    return signs;
  }

  // values (a parameter's or the images') against `analytic` by Richardson-extrapolated central differences of
  // `loss` (which writes the values and runs the forward nodes), leaving out elements whose steps change a
  // LeakyReLU's sign. Counts what it left out and compared.
  void expect_match(std::vector<float>& values, const std::vector<float>& analytic, const std::function<double()>& loss,
                    const std::vector<bool>& base, const std::string& name, size_t& left_out, size_t& compared,
                    double step = kStep) {
    double diff = 0, norm_numeric = 0, norm_analytic = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float saved = values[i];
      bool crossed = false;
      auto loss_at = [&](double offset) {
        values[i] = static_cast<float>(saved + offset);
        const double value = loss();
        crossed = crossed || leaky_signs() != base;
        return value;
      };
      const double d1 = (loss_at(step) - loss_at(-step)) / (2 * step);
      const double d2 = (loss_at(2 * step) - loss_at(-2 * step)) / (4 * step);
      values[i] = saved;
      if (crossed) {
        ++left_out;
        continue;
      }
      ++compared;
      const double numeric = (4 * d1 - d2) / 3;
      diff += (numeric - analytic[i]) * (numeric - analytic[i]);
      norm_numeric += numeric * numeric;
      norm_analytic += double(analytic[i]) * analytic[i];
    }
    EXPECT_GT(std::sqrt(norm_analytic), 1e-6) << name << ": the gradient is zero";
    EXPECT_LE(std::sqrt(diff) / std::max(std::sqrt(norm_numeric), std::sqrt(norm_analytic)), kTolerance)
        << name << ": numeric norm " << std::sqrt(norm_numeric) << ", analytic " << std::sqrt(norm_analytic);
  }

  // The signs after a forward-only run from the current parameters and images.
  std::vector<bool> forward_signs() {
    t.write_parameters();
    write_images();
    t.e->run_nodes(0, t.e->forward_node_count());
    return leaky_signs();
  }

  // Every parameter's gradient against finite differences of the whole loss.
  void expect_gradients_match(double step = kStep, bool zero_for_biases = false) {
    t.write_parameters();
    write_images();
    t.e->run();
    ASSERT_TRUE(std::isfinite(*t.e->f32(t.loss)));
    std::vector<std::pair<TensorId, std::vector<float>>> analytic;
    for (auto& [id, values] : t.parameters) analytic.push_back({id, t.read(t.gradients.at(id))});
    const std::vector<bool> base = forward_signs();
    size_t left_out = 0, compared = 0;
    for (size_t k = 0; k < t.parameters.size(); ++k) {
      auto& [id, values] = t.parameters[k];
      const std::string& name = t.graph.tensor(id).name;
      const bool zero = std::all_of(analytic[k].second.begin(), analytic[k].second.end(), [](float g) { return g == 0; });
      if (zero_for_biases && zero && name.find("bias") != std::string::npos) {
        zero_biases.push_back(name);
        continue;
      }
      expect_match(values, analytic[k].second, [&] { return t.forward_loss(); }, base, t.graph.tensor(id).name,
                   left_out, compared, step);
    }
    EXPECT_LE(left_out, compared / 20) << "too many elements crossed a LeakyReLU kink";
    t.write_parameters();
  }
  std::vector<std::string> zero_biases;  // expect_gradients_match(.., true): biases whose gradient is all zero
};

TEST(EngineR1, InputGradientMatchesFiniteDifferencesOfTheScoreSum) {
  TinyDiscriminator d(true);
  d.finish(d.t.b.add_losses(d.t.b.softplus_loss(d.scores, -1.0), d.t.b.squared_norm_loss(d.input_gradient, 5.0)));
  const std::vector<bool> base = d.forward_signs();
  const std::vector<float> analytic = d.t.read(d.input_gradient);
  size_t left_out = 0, compared = 0;
  d.expect_match(d.images, analytic, [&] {
    d.write_images();
    d.t.e->run_nodes(0, d.t.e->forward_node_count());
    double sum = 0;
    for (float s : d.t.read(d.scores)) sum += s;
    return sum;
  }, base, "images", left_out, compared, kSmoothStep);
  EXPECT_LE(left_out, compared / 10) << "too many elements crossed a LeakyReLU kink";
}

TEST(EngineR1, InputGradientIsForwardNodesAndItsSecondBackwardRunsEveryPass) {
  TinyDiscriminator d(true);
  const size_t before = d.t.graph.nodes().size();
  d.finish(d.t.b.add_losses(d.t.b.softplus_loss(d.scores, -1.0), d.t.b.squared_norm_loss(d.input_gradient, 5.0)));
  std::multiset<std::string> forward_ops, backward_ops;
  for (const Node& node : d.t.graph.nodes()) (node.backward ? backward_ops : forward_ops).insert(node.op);
  EXPECT_GT(d.t.e->forward_node_count(), before) << "the input gradient's nodes are forward nodes";
  EXPECT_EQ(forward_ops.count("fill"), 1u);
  EXPECT_EQ(forward_ops.count("conv2d_backward_data"), 6u) << "dD/dx through all six convs";
  EXPECT_EQ(forward_ops.count("leaky_relu_backward"), 7u);
  EXPECT_EQ(forward_ops.count("minibatch_stddev_backward"), 1u);
  // Second order: each backward-data conv gives a forward conv (d dy) and a filter pass (d w) in the backward
  // pass, besides the filter passes of D's own forward convs (6): twelve filter passes, six forward convs.
  EXPECT_EQ(backward_ops.count("conv2d_backward_filter"), 12u);
  EXPECT_EQ(backward_ops.count("conv2d"), 6u);
  EXPECT_EQ(backward_ops.count("conv2d_backward_data"), 5u) << "D's own data passes (the images need none)";
  EXPECT_EQ(backward_ops.count("minibatch_stddev_backward_backward"), 1u);
  EXPECT_EQ(backward_ops.count("avg_pool2d"), 1u);
  EXPECT_EQ(backward_ops.count("fused_conv_weight_backward"), 1u);
}

TEST(EngineR1, RealLossWithR1MatchesFiniteDifferencesInEveryWeight) {
  TinyDiscriminator d(true);
  d.finish(d.t.b.add_losses(d.t.b.softplus_loss(d.scores, -1.0), d.t.b.squared_norm_loss(d.input_gradient, 5.0)));
  d.expect_gradients_match();
}

// The R1 term alone, in every weight and bias. The biases before the minibatch stddev reach dD/dx through its
// non-linear backward; those after it (the 4 x 4 conv's, the first dense layer's) only move LeakyReLU kinks of
// dD/dx, so their gradient is exactly zero: autodiff zero-fills a parameter the loss reads only through
// piecewise-constant masks, as PyTorch's backward does.
TEST(EngineR1, R1TermAloneMatchesFiniteDifferencesInEveryWeight) {
  TinyDiscriminator d(false);
  d.finish(d.t.b.squared_norm_loss(d.input_gradient, 5.0));
  d.expect_gradients_match(kStep, /*zero_for_biases=*/true);
  EXPECT_EQ(d.zero_biases, (std::vector<std::string>{"final.conv.bias", "final.dense0.bias"}));
}

}  // namespace
}  // namespace sb
