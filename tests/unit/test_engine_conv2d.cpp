// conv2d through the graph on the CPU device: GraphBuilder's shape checks and "SAME" padding, the workspace
// tensor the planner places by liveness, the node giving what sb::cpu::conv2d_forward gives, and finite-
// difference gradients of the input, weights and bias through autodiff's rule for plain, strided
// asymmetric, atrous and depthwise convolutions. Run: unit_tests --gtest_filter='EngineConv2d*'.
#include <gtest/gtest.h>

#include "src/cpu/bias.h"
#include "src/cpu/conv2d.h"
#include "src/core/ops/conv2d.h"
#include "tests/support/conv_geometry.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

TEST(EngineConv2d, BuilderChecksShapes) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 8, 8, 6});
  EXPECT_THROW(b.conv2d(b.input("flat", {2, 64}), b.parameter("w0", {4, 3, 3, 6})), UsageError);
  EXPECT_THROW(b.conv2d(x, b.parameter("w1", {4, 3, 3, 5})), UsageError);          // C does not match
  EXPECT_THROW(b.conv2d(x, b.parameter("w2", {4, 3, 3, 2}), kNoTensor, Conv2dOptions::with(1, 1, 1, 4)),
               UsageError);                                                          // 4 groups, 6 channels
  EXPECT_THROW(b.conv2d(x, b.parameter("w3", {4, 11, 11, 6})), UsageError);         // kernel beyond the input
  EXPECT_THROW(b.conv2d(x, b.parameter("w4", {4, 3, 3, 6}), b.parameter("b4", {5})), UsageError);
  EXPECT_THROW(b.conv2d(x, b.parameter("w5", {4, 3, 3, 6}), kNoTensor, Conv2dOptions::with(0, 1)), UsageError);
}

TEST(EngineConv2d, SamePaddingFollowsTensorFlow) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {1, 42, 42, 2});
  const TensorId y = b.conv2d(x, b.parameter("w", {3, 3, 3, 2}), kNoTensor, Conv2dOptions::same_padding(2));
  EXPECT_EQ(graph.tensor(y).shape, (std::vector<int64_t>{1, 21, 21, 3}));
  const NodeAttributes& a = graph.nodes().back().attributes;
  EXPECT_EQ(a.at("pad_top"), 0);  // total 1: the odd pixel at the bottom/right
  EXPECT_EQ(a.at("pad_bottom"), 1);
  EXPECT_EQ(a.at("pad_left"), 0);
  EXPECT_EQ(a.at("pad_right"), 1);
  const TensorId z = b.conv2d(y, b.parameter("w2", {3, 3, 3, 1}), kNoTensor, Conv2dOptions::same_padding(1, 6, 3));
  EXPECT_EQ(graph.tensor(z).shape, (std::vector<int64_t>{1, 21, 21, 3}));  // atrous depthwise, rate 6
  EXPECT_EQ(graph.nodes().back().attributes.at("pad_top"), 6);
}

TEST(EngineConv2d, WorkspaceIsPlannedByLiveness) {
  Graph graph;
  GraphBuilder b(graph);
  b.set_conv_workspace_limit(4 << 20);
  TensorId h = b.input("x", {4, 32, 32, 16});
  for (int i = 0; i < 3; ++i) h = b.conv2d(h, b.parameter("w" + std::to_string(i), {16, 3, 3, 16}), kNoTensor,
                                          Conv2dOptions::same_padding());
  const TensorId loss = b.softmax_cross_entropy(b.reshape(h, {4 * 32 * 32, 16}), b.input("t", {4096}, DType::kInt32),
                                                0.0, -1);
  append_backward(graph, loss);
  const auto workspaces = graph.tensors_with_role(TensorRole::kWorkspace);
  ASSERT_EQ(workspaces.size(), 3u * 3 - 1) << "three forward, three filter and two data passes (x is data)";
  const uint64_t each = graph.tensor(workspaces[0]).bytes();
  EXPECT_EQ(each, 1u << 20) << "twice the largest operand (256 KiB activations) is below the 1 MiB floor";
  const MemoryPlan plan = plan_memory(graph);
  for (TensorId w : workspaces) {
    EXPECT_EQ(graph.tensor(w).bytes(), each);
    EXPECT_EQ(plan.first_use[size_t(w)], plan.last_use[size_t(w)]) << "a workspace lives for its node only";
  }
  // Eight workspaces never live together: the arena holds about one.
  EXPECT_LT(plan.activation_peak_bytes, 3 * each);
  EXPECT_GE(plan.activation_peak_bytes, each);
  EXPECT_EQ(matmul_flops(graph, false), 3 * 2.0 * 4 * 32 * 32 * 16 * 9 * 16);
}

// 16-bit convolutions with a spatial kernel, C > 8 not a multiple of 8 and K a multiple of 8 are given to cuDNN
// with C rounded up to 8 (zero channels in copies of x and w at the front of the node's workspace); nothing else.
TEST(EngineConv2d, ChannelsArePaddedForTensorCoresOnlyWhereTheRuleSays) {
  const Conv2dGeometry d_first = test::geometry(2, 16, 20, 39, 64, 4, 4, 2, 1, 2, 2, 2, 2);
  EXPECT_EQ(conv2d_cudnn_in_channels(d_first, 2), 40);
  EXPECT_EQ(conv2d_cudnn_in_channels(d_first, 4), 39) << "fp32 keeps its channels";
  EXPECT_EQ(conv2d_cudnn_in_channels(test::geometry(2, 16, 20, 36, 32, 7, 7, 1, 1, 3, 3, 3, 3), 2), 40);
  EXPECT_EQ(conv2d_cudnn_in_channels(test::geometry(2, 16, 20, 39, 64, 1, 1, 1, 1, 0, 0, 0, 0), 2), 39) << "1 x 1";
  EXPECT_EQ(conv2d_cudnn_in_channels(test::geometry(2, 16, 20, 3, 64, 7, 7, 2, 1, 3, 3, 3, 3), 2), 3) << "RGB stem";
  EXPECT_EQ(conv2d_cudnn_in_channels(test::geometry(2, 16, 20, 39, 42, 3, 3, 1, 1, 1, 1, 1, 1), 2), 39) << "K = 42";
  EXPECT_EQ(conv2d_cudnn_in_channels(test::geometry(2, 16, 20, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1), 2), 48);
  // Symmetric padding: the front copies are x (2 x 16 x 20 x 40) and w (64 x 4 x 4 x 40), each in whole 256 bytes.
  EXPECT_EQ(conv2d_padded_input_bytes(d_first, 2), 51200u);
  EXPECT_EQ(conv2d_padded_filter_bytes(d_first, 2), 81920u);
  EXPECT_EQ(conv2d_padded_copy_bytes(d_first, 2), 51200u + 81920u);
  EXPECT_EQ(conv2d_padded_copy_bytes(d_first, 4), 0u);
  // Asymmetric padding and padded channels: the copy has the extra row and column and 16 channels.
  const Conv2dGeometry both = test::geometry(2, 12, 10, 12, 16, 3, 3, 2, 1, 0, 1, 0, 1);
  EXPECT_EQ(conv2d_padded_input_bytes(both, 2), (2u * 13 * 11 * 16 * 2 + 255) / 256 * 256);
  EXPECT_EQ(conv2d_padded_input_bytes(both, 4), (2u * 13 * 11 * 12 * 4 + 255) / 256 * 256);
}

TEST(EngineConv2d, NodeGivesTheCpuKernelsResultPlusBias) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 6, 3});
  const TensorId w = t.parameter("w", {4, 3, 3, 3}, 0.5f);
  const TensorId bias = t.parameter("bias", {4});
  const TensorId y = t.b.conv2d(x, w, bias, Conv2dOptions::same_padding(2));
  t.finish(y);
  t.e->run();
  Conv2dGeometry g = conv2d_geometry(t.graph.nodes()[0].attributes);
  std::vector<float> want(static_cast<size_t>(g.y_elements()));
  cpu::conv2d_forward(t.values(x).data(), t.values(w).data(), want.data(), g);
  cpu::bias_add_forward(want.data(), t.values(bias).data(), g.batch * g.out_h * g.out_w, g.out_c);
  EXPECT_EQ(t.read(y), want);
}

TEST(EngineConv2d, GradientsMatchFiniteDifferencesPlainAndStrided) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 6, 3});
  TensorId h = t.b.conv2d(x, t.parameter("w0", {4, 3, 3, 3}, 0.4f), t.parameter("b0", {4}),
                          Conv2dOptions::same_padding(2));  // 5 x 6 -> 3 x 3, pads (1, 1) and (0, 1)
  h = t.b.conv2d(h, t.parameter("w1", {5, 1, 1, 4}, 0.5f));  // pointwise
  t.finish(h);
  t.expect_gradients_match();
}

TEST(EngineConv2d, GradientsMatchFiniteDifferencesAtrousAndDepthwise) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {1, 7, 7, 4});
  TensorId h = t.b.conv2d(x, t.parameter("dw", {4, 3, 3, 1}, 0.5f), kNoTensor, Conv2dOptions::with(1, 2, 2, 4));
  Conv2dOptions asymmetric;  // NASNet's ZeroPad2d((1, 0, 1, 0)) before a stride-2 depthwise conv
  asymmetric.stride_h = asymmetric.stride_w = 2;
  asymmetric.pad_top = asymmetric.pad_left = 1;
  asymmetric.groups = 4;
  h = t.b.conv2d(h, t.parameter("dw2", {8, 3, 3, 1}, 0.5f), kNoTensor, asymmetric);  // channel multiplier 2
  t.finish(h);
  t.expect_gradients_match();
}

}  // namespace
}  // namespace sb
