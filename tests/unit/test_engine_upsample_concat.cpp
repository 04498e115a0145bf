// Resizing, concatenation and split through the graph on the CPU device: builder checks and finite-difference
// gradients of a graph with YOLOv3's route (nearest ×2, concat), DeepLab's image pooling (global average,
// 1 x 1 conv, bilinear broadcast) and ×4 bilinear output, and a split whose one part is unused.
// Run: unit_tests --gtest_filter='EngineUpsampleConcat*'.
#include <gtest/gtest.h>

#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

TEST(EngineUpsampleConcat, BuilderChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 4, 4, 3});
  EXPECT_THROW(b.concat({x, b.input("y", {2, 4, 5, 3})}), UsageError);
  EXPECT_THROW(b.split(x, {1, 1}), UsageError);
  EXPECT_THROW(b.upsample_nearest(b.input("flat", {2, 3}), 4, 4), UsageError);
  EXPECT_EQ(graph.tensor(b.concat({x, b.input("z", {2, 4, 4, 5})})).shape, (std::vector<int64_t>{2, 4, 4, 8}));
}

TEST(EngineUpsampleConcat, GradientsMatchFiniteDifferences) {
  test::OpGraph t;
  const TensorId deep = t.parameter("deep", {2, 3, 3, 4}), route = t.parameter("route", {2, 6, 6, 2});
  TensorId h = t.b.concat({t.b.upsample_nearest(deep, 6, 6), route});  // (2, 6, 6, 6)
  const TensorId pooled = t.b.conv2d(t.b.global_avg_pool(h), t.parameter("wp", {6, 1, 1, 6}, 0.5f));
  h = t.b.add(h, t.b.upsample_bilinear(pooled, 6, 6, false));  // image pooling broadcast
  const std::vector<TensorId> parts = t.b.split(h, {2, 3, 1});  // the last part unused
  h = t.b.concat({parts[1], parts[0]});
  h = t.b.upsample_bilinear(t.b.conv2d(h, t.parameter("w", {3, 1, 1, 5}, 0.5f)), 11, 9, false);
  t.finish(t.b.add(h, t.b.upsample_bilinear(t.parameter("side", {2, 4, 3, 3}), 11, 9, true)));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);  // no kinks
}

}  // namespace
}  // namespace sb
