// The ConvS2S ops through the graph on the CPU device: GraphBuilder's checks for glu, weight_norm, grad_multiply
// and scale_rows; each node giving what its sb::cpu kernel gives; finite-difference gradients of a small
// encoder/decoder block pair (weight-normalised convolutions with "same" and causal padding as conv2d with
// H = 1, GLU, masked positions, a weight-normalised linear layer); GradMultiply's identity forward pass (a view)
// and scaled backward pass. Run: unit_tests --gtest_filter='EngineConvS2S*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "src/cpu/glu.h"
#include "src/cpu/weight_norm.h"
#include "tests/support/tensor_compare.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

struct OpGraph : test::OpGraph {
  OpGraph() { seed = 1100; }
};

TEST(EngineConvS2S, BuilderChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 1, 5, 6});
  EXPECT_THROW(b.glu(b.input("odd", {2, 5})), UsageError);
  EXPECT_EQ(graph.tensor(b.glu(x)).shape, (std::vector<int64_t>{2, 1, 5, 3}));
  const TensorId v = b.parameter("v", {4, 1, 3, 6});
  EXPECT_THROW(b.weight_norm(v, b.parameter("g_wrong", {3})), UsageError);
  EXPECT_THROW(b.weight_norm(b.parameter("flat", {4}), b.parameter("g_flat", {4})), UsageError);
  EXPECT_THROW(b.weight_norm(b.input("ids", {4, 2}, DType::kInt32), b.parameter("g_ids", {4})), UsageError);
  const TensorId w = b.weight_norm(v, b.parameter("g", {4}));
  EXPECT_EQ(graph.tensor(w).shape, graph.tensor(v).shape);
  EXPECT_EQ(graph.nodes().back().attributes.at("cols"), 18);  // a norm over the 3 taps x 6 inputs of a row
  EXPECT_THROW(b.scale_rows(x, b.parameter("not_data", {2, 1, 5})), UsageError);  // factors take no gradient
  EXPECT_THROW(b.scale_rows(x, b.input("trailing", {5, 6})), UsageError);       // not the leading dimensions
  EXPECT_THROW(b.scale_rows(x, b.input("ints", {2}, DType::kInt32)), UsageError);
  EXPECT_EQ(graph.nodes().size(), 2u);
  EXPECT_NO_THROW(b.scale_rows(x, b.input("per_sentence", {2})));
  EXPECT_THROW(b.grad_multiply(x, 0.0), UsageError);
  const TensorId scaled = b.grad_multiply(x, 0.5);
  EXPECT_EQ(graph.tensor(scaled).view_of, x) << "the forward pass is a view";
  b.disable_gradient_scaling();
  EXPECT_EQ(b.grad_multiply(x, 0.5), x);
}

// The node's element count whatever the tensor list's growth: GraphBuilder::grad_multiply once read x's
// TensorInfo through a reference after adding its output, and a bf16 graph on H200 got n = 1 (every gradient
// element but one left unscaled). Each count of tensors before it puts the list's reallocation elsewhere.
TEST(EngineConvS2S, GradMultiplyCountsEveryElementWhereverTheTensorListGrows) {
  for (int before = 0; before < 40; ++before) {
    Graph graph;
    GraphBuilder b(graph);
    for (int i = 0; i < before; ++i) b.input("filler_" + std::to_string(i), {1});
    const TensorId x = b.input("x", {3, 1, 7, 8});
    b.grad_multiply(x, 0.5);
    EXPECT_EQ(graph.nodes().back().attributes.at("n"), 168) << before << " tensors before";
  }
}

TEST(EngineConvS2S, NodesGiveTheKernelsResults) {
  OpGraph t;
  const TensorId v = t.parameter("v", {6, 4}), g = t.parameter("g", {6});
  const TensorId w = t.b.weight_norm(v, g);
  const TensorId x = t.parameter("x", {5, 8});
  const TensorId y = t.b.glu(x);
  t.finish(t.b.linear(y, w), {w, y});
  t.e->run();
  std::vector<float> want_w(6 * 4), norms(6), want_y(5 * 4);
  cpu::weight_norm_forward(t.values(v).data(), t.values(g).data(), want_w.data(), norms.data(), 6, 4);
  cpu::glu_forward(t.values(x).data(), want_y.data(), 5, 4);
  EXPECT_EQ(t.read(w), want_w);
  EXPECT_EQ(t.read(y), want_y);
  EXPECT_GT(test::l2_norm(want_y), 0.0);
}

// One encoder block and one decoder block of ConvS2S at toy size, NHWC (batch, 1, time, channels): padded
// positions zeroed by scale_rows, a weight-normalised "same" convolution (k = 3) and GLU with the residual,
// then a causal convolution (k = 3, padding 2 on the left), GLU, a weight-normalised linear layer.
TEST(EngineConvS2S, BlockGradientsMatchFiniteDifferences) {
  const int64_t batch = 2, time = 5, channels = 4;
  OpGraph t;
  const TensorId x = t.parameter("x", {batch, 1, time, channels});
  const TensorId mask = t.float_input("mask", {batch, 1, time}, {1, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  Conv2dOptions same, causal;
  same.pad_left = same.pad_right = 1;
  causal.pad_left = 2;
  const TensorId w0 = t.b.weight_norm(t.parameter("conv0.weight_v", {2 * channels, 1, 3, channels}, 0.5f),
                                      t.parameter("conv0.weight_norm", {2 * channels}));
  TensorId h = t.b.glu(t.b.conv2d(t.b.scale_rows(x, mask), w0, t.parameter("conv0.bias", {2 * channels}), same));
  h = t.b.scale(t.b.add(h, x), std::sqrt(0.5));
  const TensorId w1 = t.b.weight_norm(t.parameter("conv1.weight_v", {2 * channels, 1, 3, channels}, 0.5f),
                                      t.parameter("conv1.weight_norm", {2 * channels}));
  h = t.b.glu(t.b.conv2d(h, w1, t.parameter("conv1.bias", {2 * channels}), causal));
  const TensorId w2 = t.b.weight_norm(t.parameter("fc.weight_v", {3, channels}), t.parameter("fc.weight_norm", {3}));
  t.finish(t.b.scale(t.b.linear(h, w2, t.parameter("fc.bias", {3})), 3.0));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);  // smooth: no kinks
}

// GradMultiply: the loss is that of the graph without it (a view, no kernel), the gradient of everything
// before it is scaled by the factor, and everything after it is untouched.
TEST(EngineConvS2S, GradMultiplyScalesOnlyTheGradientBeforeIt) {
  constexpr double kFactor = 0.25;
  for (bool scaling : {true, false}) {
    OpGraph t;
    if (!scaling) t.b.disable_gradient_scaling();
    const TensorId p = t.parameter("p", {3, 4});
    const TensorId w = t.parameter("w", {5, 4});
    const TensorId z = t.b.grad_multiply(t.b.tanh(p), kFactor);
    t.finish(t.b.linear(z, w));
    if (scaling) EXPECT_EQ(t.plan.offsets[size_t(z)], t.plan.offsets[size_t(t.graph.tensor(z).view_of)]);
    t.e->run();
    const double loss = *t.e->f32(t.loss);
    std::vector<float> dp = t.read(t.gradients.at(p)), dw = t.read(t.gradients.at(w));
    const double expected_factor = scaling ? kFactor : 1.0;
    for (float& d : dp) d = static_cast<float>(d / expected_factor);
    auto forward = [&] { return t.forward_loss(); };
    const test::GradientComparison for_p =
        test::compare_with_finite_differences(t.values(p), forward, dp, test::kOpGraphStep, true);
    const test::GradientComparison for_w =
        test::compare_with_finite_differences(t.values(w), forward, dw, test::kOpGraphStep, true);
    EXPECT_GT(for_p.analytic_norm, 1e-6);
    EXPECT_LE(for_p.relative_error, test::kOpGraphGradientTolerance) << "p / factor: " << for_p.describe();
    EXPECT_LE(for_w.relative_error, test::kOpGraphGradientTolerance) << "w: " << for_w.describe();
    EXPECT_DOUBLE_EQ(t.forward_loss(), loss) << "the forward pass does not depend on the scaling";
  }
}

}  // namespace
}  // namespace sb
