// The CNN workloads' losses and drop-path through the graph on the CPU device: YOLOv3's loss over three conv
// heads (builder checks; finite-difference gradients through autodiff, the loss op starting the backward
// pass), DeepLab's pixel-wise cross-entropy (NHWC logits viewed as pixels x classes, label 255 ignored:
// ignored pixels get no gradient), and drop-path (whole samples dropped, the same samples in the backward
// pass, fresh ones next step), and NASNet's weighted sum of the main and auxiliary losses.
// Run: unit_tests --gtest_filter='EngineCnnLosses*:EngineDropPath*'.
#include <gtest/gtest.h>

#include "src/cpu/drop_path.h"
#include "tests/unit/engine_op_graph.h"

namespace sb {
namespace {

TEST(EngineCnnLosses, YoloBuilderChecks) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId h0 = b.input("h0", {2, 2, 2, 24}), h1 = b.input("h1", {2, 4, 4, 24});
  const TensorId h2 = b.input("h2", {2, 8, 8, 24});
  const TensorId truth = b.input("truth", {2, 8, 5});
  EXPECT_THROW(b.yolo_loss(h0, h1, h2, truth, 4), UsageError);  // 3 (5 + 4) = 27 channels, not 24
  EXPECT_THROW(b.yolo_loss(h0, h1, h2, b.input("bad", {2, 8, 4}), 3), UsageError);
  EXPECT_THROW(b.yolo_loss(h0, h1, b.input("h2b", {2, 8, 7, 24}), truth, 3), UsageError);
  EXPECT_EQ(graph.tensor(b.yolo_loss(h0, h1, h2, truth, 3)).shape, (std::vector<int64_t>{1}));
}

TEST(EngineCnnLosses, YoloGradientsMatchFiniteDifferences) {
  test::OpGraph t;
  const int64_t classes = 2, channels = 3 * (5 + classes);
  const TensorId features = t.parameter("features", {2, 8, 8, 3}, 0.5f);
  const TensorId h2 =
      t.b.conv2d(features, t.parameter("w2", {channels, 1, 1, 3}, 0.3f), t.parameter("b2", {channels}, 0.1f));
  const TensorId h1 = t.b.conv2d(t.b.max_pool2d(features, 2, Conv2dOptions::with(2, 0)),
                                 t.parameter("w1", {channels, 1, 1, 3}, 0.3f));
  const TensorId h0 = t.b.conv2d(t.b.avg_pool2d(features, 4, Conv2dOptions::with(4, 0), true),
                                 t.parameter("w0", {channels, 1, 1, 3}, 0.3f));
  const TensorId truth = t.b.input("truth", {2, 3, 5});
  t.finish_with_loss(t.b.yolo_loss(h0, h1, h2, truth, classes));
  const std::vector<float> boxes{0, 0.3f, 0.4f, 0.5f, 0.4f, 1, 0.7f, 0.2f, 0.05f, 0.08f, 1, 0.52f, 0.61f, 0.2f, 0.3f,
                                 1, 0.5f, 0.5f, 0.9f, 0.8f, 0, 0.2f, 0.8f, 0.1f, 0.1f, 0, 0, 0, 0, 0};
  std::copy(boxes.begin(), boxes.end(), t.e->f32(truth));
  // The loss sums ~500 predictions' terms (~170 before the mean over 2 images): its fp32 rounding (~1e-5) needs
  // h = 1e-2 to stay below the tolerance.
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);
}

TEST(EngineCnnLosses, PixelCrossEntropyIgnoresLabel255) {
  test::OpGraph t;
  const int64_t classes = 3;
  const TensorId x = t.parameter("x", {2, 3, 4, 2});
  const TensorId logits = t.b.upsample_bilinear(t.b.conv2d(x, t.parameter("w", {classes, 1, 1, 2})), 6, 8, false);
  std::vector<int32_t> labels = test::random_ids(2 * 6 * 8, 5, 0, classes - 1);
  for (size_t i = 0; i < labels.size(); i += 3) labels[i] = 255;  // a third of the pixels ignored
  const TensorId targets = t.int_input("labels", {2 * 6 * 8}, labels);
  t.finish_with_loss(t.b.softmax_cross_entropy(t.b.reshape(logits, {2 * 6 * 8, classes}), targets, 0.0, 255));
  t.expect_gradients_match(test::kOpGraphGradientTolerance, test::kOpGraphSmoothStep);  // no kinks

  // Logits as the parameter itself: their gradient is zero exactly on the ignored pixels.
  test::OpGraph direct;
  const TensorId pixels = direct.parameter("pixels", {2 * 6 * 8, classes});
  direct.finish_with_loss(
      direct.b.softmax_cross_entropy(pixels, direct.int_input("labels", {2 * 6 * 8}, labels), 0.0, 255));
  direct.write_parameters();
  direct.e->run();
  const std::vector<float> dlogits = direct.read(direct.gradients.at(pixels));
  double kept_norm = 0;
  for (size_t p = 0; p < labels.size(); ++p) {
    for (int64_t c = 0; c < classes; ++c) {
      if (labels[p] == 255) {
        EXPECT_EQ(dlogits[p * classes + size_t(c)], 0.0f) << "pixel " << p;
      }
      if (labels[p] != 255) kept_norm += std::fabs(dlogits[p * classes + size_t(c)]);
    }
  }
  EXPECT_GT(kept_norm, 0.0);
}

// NASNet's training loss: label-smoothed CE of the main head plus 0.4 x the auxiliary head's CE. The sum is
// main + 0.4 aux, and the gradients (autodiff seeding the auxiliary loss's backward with 0.4) match finite
// differences of it.
TEST(EngineCnnLosses, WeightedSumWithAnAuxiliaryHead) {
  test::OpGraph t;
  const int64_t classes = 5;
  const TensorId features = t.parameter("features", {4, 6, 6, 3});
  const TensorId h =
      t.b.conv2d(features, t.parameter("w", {8, 3, 3, 3}, 0.3f), kNoTensor, Conv2dOptions::same_padding());
  const TensorId main_logits = t.b.linear(t.b.reshape(t.b.global_avg_pool(h), {4, 8}), t.parameter("fc", {classes, 8}));
  const TensorId aux =
      t.b.conv2d(t.b.avg_pool2d(h, 5, Conv2dOptions::with(3, 0), false), t.parameter("aux_w", {6, 1, 1, 8}));
  const TensorId aux_logits = t.b.linear(t.b.reshape(aux, {4, 6}), t.parameter("aux_fc", {classes, 6}));
  const TensorId targets = t.int_input("labels", {4}, {0, 3, 1, 4});
  const TensorId main_loss = t.b.softmax_cross_entropy(main_logits, targets, 0.1, -1);
  const TensorId aux_loss = t.b.softmax_cross_entropy(aux_logits, targets, 0.0, -1);
  EXPECT_THROW(t.b.add_losses(main_loss, aux_loss, 0.0), UsageError);
  t.finish_with_loss(t.b.add_losses(main_loss, aux_loss, 0.4));
  t.write_parameters();
  t.e->run();
  EXPECT_NEAR(*t.e->f32(t.loss), *t.e->f32(main_loss) + 0.4f * *t.e->f32(aux_loss), 1e-6);
  t.expect_gradients_match();
}

TEST(EngineDropPath, WholeSamplesDropSameInBackwardFreshNextStep) {
  test::OpGraph t;
  const int64_t batch = 16;
  const TensorId x = t.parameter("x", {batch, 2, 2, 3});
  const TensorId dropped = t.b.drop_path(x, 0.5);
  t.finish(t.b.conv2d(dropped, t.parameter("w", {4, 1, 1, 3})), {dropped});
  auto kept_samples = [&] {
    const std::vector<float> y = t.read(dropped), xs = t.values(x);
    std::vector<int> kept;
    for (int64_t n = 0; n < batch; ++n) {
      int zeros = 0;
      for (int64_t i = n * 12; i < (n + 1) * 12; ++i) {
        zeros += y[size_t(i)] == 0.0f;
        if (y[size_t(i)] != 0.0f) {
          EXPECT_FLOAT_EQ(y[size_t(i)], 2.0f * xs[size_t(i)]);
        }
      }
      EXPECT_TRUE(zeros == 0 || zeros == 12) << "sample " << n << " partly dropped";
      kept.push_back(zeros == 0);
    }
    return kept;
  };
  t.e->set_random_stream(3, 0);
  t.e->run();
  const std::vector<int> first = kept_samples();
  int kept_count = 0;
  for (int k : first) kept_count += k;
  EXPECT_GT(kept_count, 2);
  EXPECT_LT(kept_count, 14);
  // Dropped samples get no gradient: the backward drops the same samples.
  const std::vector<float> dx = t.read(t.gradients.at(x));
  for (int64_t n = 0; n < batch; ++n) {
    double norm = 0;
    for (int64_t i = n * 12; i < (n + 1) * 12; ++i) norm += std::fabs(dx[size_t(i)]);
    EXPECT_EQ(norm == 0.0, first[size_t(n)] == 0) << "sample " << n;
  }
  t.e->set_random_stream(3, 1);
  t.e->run();
  EXPECT_NE(kept_samples(), first) << "a fresh draw each step";
  t.e->set_random_stream(3, 0);
  t.e->run();
  EXPECT_EQ(kept_samples(), first) << "a step replays its draw";
}

}  // namespace
}  // namespace sb
