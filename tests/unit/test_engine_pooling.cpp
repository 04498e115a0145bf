// Pooling through the graph on the CPU device: the builder's shapes and checks (TF "SAME" windows, NASNet's
// avg 3 x 3 stride 1 and its shifted 1 x 1 subsample, the global average) and finite-difference gradients
// through autodiff's rules.
// Run: unit_tests --gtest_filter='EnginePooling*'.
#include <gtest/gtest.h>

#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

// ZeroPad2d((0, 1, 0, 1)), crop [1:, 1:], then a 1 x 1 window at stride 2: pads -1 (a crop) and +1.
Conv2dOptions shifted_subsample() {
  Conv2dOptions o = Conv2dOptions::with(2, 0);
  o.pad_top = o.pad_left = -1;
  o.pad_bottom = o.pad_right = 1;
  return o;
}

TEST(EnginePooling, BuilderShapesAndChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 165, 165, 8});
  // NASNet's reduction: max 3 x 3 stride 2 "SAME" on 165: 83; DeepLab's stem pool: 3 x 3 s2 p1 on 257: 129.
  EXPECT_EQ(b.graph().tensor(b.max_pool2d(x, 3, Conv2dOptions::same_padding(2))).shape,
            (std::vector<int64_t>{2, 83, 83, 8}));
  EXPECT_EQ(b.graph().tensor(b.max_pool2d(b.input("r", {1, 257, 257, 4}), 3, Conv2dOptions::with(2, 1))).shape,
            (std::vector<int64_t>{1, 129, 129, 4}));
  EXPECT_EQ(b.graph().tensor(b.avg_pool2d(x, 3, Conv2dOptions::with(1, 1), false)).shape,
            (std::vector<int64_t>{2, 165, 165, 8}));
  EXPECT_EQ(b.graph().tensor(b.global_avg_pool(x)).shape, (std::vector<int64_t>{2, 1, 1, 8}));
  EXPECT_THROW(b.max_pool2d(x, 3, Conv2dOptions::with(2, 3)), UsageError);     // a window of padding only
  EXPECT_THROW(b.avg_pool2d(x, 3, Conv2dOptions::with(1, 1, 2), true), UsageError);  // dilation
  EXPECT_THROW(b.global_avg_pool(b.input("flat", {2, 8})), UsageError);
  // NASNet's factorized reduction, path 2: the input shifted by one pixel, then 1 x 1 at stride 2 (165: 83).
  EXPECT_EQ(b.graph().tensor(b.avg_pool2d(x, 1, shifted_subsample(), true)).shape,
            (std::vector<int64_t>{2, 83, 83, 8}));
  EXPECT_THROW(b.avg_pool2d(x, 1, shifted_subsample(), false), UsageError);  // the last window is padding only
  EXPECT_THROW(b.max_pool2d(x, 1, shifted_subsample()), UsageError);
}

TEST(EnginePooling, ShiftedSubsampleGradientsMatchFiniteDifferences) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 5, 6, 3});
  const TensorId h = t.b.avg_pool2d(x, 1, shifted_subsample(), true);  // 3 x 3: rows 1, 3, pad; cols 1, 3, 5
  t.finish(t.b.conv2d(h, t.parameter("w", {4, 1, 1, 3})));
  t.expect_gradients_match();
}

TEST(EnginePooling, GradientsMatchFiniteDifferences) {
  test::OpGraph t;
  const TensorId x = t.parameter("x", {2, 6, 7, 3});
  TensorId h = t.b.max_pool2d(x, 3, Conv2dOptions::same_padding(2));          // 3 x 4, asymmetric
  h = t.b.avg_pool2d(h, 3, Conv2dOptions::with(1, 1), false);                  // NASNet's avg 3 x 3
  h = t.b.add(h, t.b.avg_pool2d(h, 3, Conv2dOptions::with(1, 1), true));       // padding counted
  h = t.b.conv2d(h, t.parameter("w", {4, 1, 1, 3}));
  t.finish(t.b.add(t.b.global_avg_pool(h), t.b.avg_pool2d(h, 3, Conv2dOptions::with(2, 0), true)));
  t.expect_gradients_match();
}

}  // namespace
}  // namespace sb
