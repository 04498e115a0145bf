// deeplabv3 against shared/WORKLOADS.md §2: 58,630,997 parameters, 71.70 GMAC forward per image at output
// stride 16 (equal to the graph's own conv products), the spatial sizes 513 -> 257 -> 129 -> 65 -> 33 with
// layer4's multi-grid rates 2, 4, 8 and ASPP's 6, 12, 18, TF deeplab's optimizer, and synthetic labels whose
// ignored pixels are as many in every image (the data-parallel check needs it). Training and gradients of
// the tiny graph: test_workloads.cpp. Run: unit_tests --gtest_filter='DeepLabV3*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

// The geometry of every forward conv node, by the name of the weight it reads.
std::map<std::string, NodeAttributes> convs_by_weight(const Graph& graph) {
  std::map<std::string, NodeAttributes> convs;
  for (const Node& node : graph.nodes()) {
    if (node.op == "conv2d" && !node.backward) convs[graph.tensor(node.inputs[1]).name] = node.attributes;
  }
  return convs;
}

TEST(DeepLabV3, FullScaleParametersAndFlopsAsSpecified) {
  const Workload& workload = find_workload("deeplabv3");
  EXPECT_EQ(workload.info().unit, "images");
  EXPECT_EQ(workload.info().batch_unit, "images");
  EXPECT_EQ(workload.info().default_batch, 16);
  EXPECT_EQ(workload.info().min_batch, 2);
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = workload.build(builder, 16, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 58630997);
  EXPECT_EQ(workload.info().full_parameters, 58630997);
  EXPECT_EQ(built.units_per_step, 16.0);
  // The analytic count is the graph's: every conv of the forward pass, per image.
  EXPECT_NEAR(built.forward_flops_per_unit, matmul_flops(graph, false) / 16, 1e-9 * built.forward_flops_per_unit);
  EXPECT_NEAR(built.forward_flops_per_unit / 2, 71.70e9, 0.005 * 71.70e9);  // WORKLOADS.md: 71.70 GMAC at OS16
  // Only the classifier has a bias; every other parameter is a conv weight or a BatchNorm gain or shift.
  for (const TensorInfo& info : graph.tensors()) {
    if (info.role != TensorRole::kParameter || info.name.find(".norm") != std::string::npos) continue;
    EXPECT_TRUE(info.name == "classifier.4.bias" || info.shape.size() == 4) << info.name;
  }
}

TEST(DeepLabV3, OutputStride16Geometry) {
  Graph graph;
  GraphBuilder builder(graph);
  find_workload("deeplabv3").build(builder, 2, WorkloadScale::kFull);
  const std::map<std::string, NodeAttributes> convs = convs_by_weight(graph);
  EXPECT_EQ(convs.size(), 104u + 5 + 1 + 2);  // ResNet-101's convs, ASPP's five branches, projection, head
  auto expect_conv = [&](const std::string& weight, int64_t out, int64_t stride, int64_t dilation, int64_t pad) {
    ASSERT_EQ(convs.count(weight), 1u) << weight;
    const NodeAttributes& a = convs.at(weight);
    EXPECT_EQ(a.at("out_h"), out) << weight;
    EXPECT_EQ(a.at("out_w"), out) << weight;
    EXPECT_EQ(a.at("stride_h"), stride) << weight;
    EXPECT_EQ(a.at("dilation_h"), dilation) << weight;
    EXPECT_EQ(a.at("pad_top"), pad) << weight;
    EXPECT_EQ(a.at("pad_bottom"), pad) << weight;
  };
  expect_conv("backbone.conv1.weight", 257, 2, 1, 3);
  expect_conv("backbone.layer1.0.conv2.weight", 129, 1, 1, 1);  // after the 3x3 s2 p1 max pool
  expect_conv("backbone.layer2.0.conv2.weight", 65, 2, 1, 1);   // v1.5: the stride on the 3x3
  expect_conv("backbone.layer2.0.conv1.weight", 129, 1, 1, 0);
  expect_conv("backbone.layer2.0.downsample.0.weight", 65, 2, 1, 0);
  expect_conv("backbone.layer3.22.conv2.weight", 33, 1, 1, 1);
  expect_conv("backbone.layer4.0.downsample.0.weight", 33, 1, 1, 0);
  expect_conv("backbone.layer4.0.conv2.weight", 33, 1, 2, 2);  // multi-grid (1, 2, 4) x 2
  expect_conv("backbone.layer4.1.conv2.weight", 33, 1, 4, 4);
  expect_conv("backbone.layer4.2.conv2.weight", 33, 1, 8, 8);
  expect_conv("classifier.0.convs.0.0.weight", 33, 1, 1, 0);
  expect_conv("classifier.0.convs.1.0.weight", 33, 1, 6, 6);
  expect_conv("classifier.0.convs.2.0.weight", 33, 1, 12, 12);
  expect_conv("classifier.0.convs.3.0.weight", 33, 1, 18, 18);
  expect_conv("classifier.0.convs.4.1.weight", 1, 1, 1, 0);  // on the image's mean
  expect_conv("classifier.1.weight", 33, 1, 1, 1);
  expect_conv("classifier.4.weight", 33, 1, 1, 0);
  EXPECT_EQ(convs.at("classifier.0.project.0.weight").at("in_c"), 1280);
  EXPECT_EQ(convs.at("classifier.4.weight").at("out_c"), 21);
  EXPECT_EQ(graph.tensor(graph.find_tensor("backbone.layer4.2.conv3.weight")).shape,
            (std::vector<int64_t>{2048, 1, 1, 512}));
  EXPECT_EQ(graph.tensor(graph.find_tensor("image")).shape, (std::vector<int64_t>{2, 513, 513, 3}));
  EXPECT_EQ(graph.tensor(graph.find_tensor("labels")).shape, (std::vector<int64_t>{2 * 513 * 513}));
}

// At batch 1 the image-pooling branch's BatchNorm would normalise one value per channel (PyTorch refuses it
// too): the builder refuses, so WorkloadInfo::min_batch says 2 and max-batch searches start there.
TEST(DeepLabV3, BatchOneIsRefused) {
  Graph graph;
  GraphBuilder builder(graph);
  EXPECT_THROW(find_workload("deeplabv3").build(builder, 1, WorkloadScale::kTiny), UsageError);
}

TEST(DeepLabV3, ReferenceOptimizerIsTfDeeplabs) {
  // research/deeplab/train.py, ResNet variants
  const OptimizerSettings s = find_workload("deeplabv3").reference_optimizer();
  EXPECT_EQ(s.kind, OptimizerKind::kSgdMomentum);
  EXPECT_FLOAT_EQ(s.momentum, 0.9f);
  EXPECT_FLOAT_EQ(s.weight_decay, 1e-4f);
  EXPECT_FLOAT_EQ(s.learning_rate, 0.007f);
  EXPECT_EQ(s.max_grad_norm, 0.0f);
}

struct Batch {
  std::vector<float> image;
  std::vector<int32_t> labels;
  int64_t size = 0, classes = 0;
};

Batch synthesize(int64_t batch, WorkloadScale scale, uint64_t seed, int64_t first_sample) {
  const Workload& workload = find_workload("deeplabv3");
  Graph graph;
  GraphBuilder builder(graph);
  workload.build(builder, batch, scale);
  Batch out;
  out.size = graph.tensor(graph.find_tensor("image")).shape[1];
  out.classes = graph.tensor(graph.find_tensor("classifier.4.bias")).shape[0];
  int written = 0;
  workload.synthesize(graph, seed, first_sample, [&](TensorId id, const void* data, size_t bytes) {
    EXPECT_EQ(bytes, graph.tensor(id).bytes()) << graph.tensor(id).name;
    if (graph.tensor(id).name == "image") {
      out.image.resize(bytes / sizeof(float));
      std::memcpy(out.image.data(), data, bytes);
    } else {
      out.labels.resize(bytes / sizeof(int32_t));
      std::memcpy(out.labels.data(), data, bytes);
    }
    ++written;
  });
  EXPECT_EQ(written, 2);
  return out;
}

// Labels in [0, classes) or 255; 255 exactly on a band `border` pixels wide at the image's edge, so every image
// ignores as many pixels; several classes per batch; pixels like normalised ones.
void expect_segmentation_batch(int64_t batch, WorkloadScale scale, int64_t border) {
  const Batch b = synthesize(batch, scale, 7, 0);
  const int64_t pixels = b.size * b.size;
  ASSERT_EQ(b.labels.size(), static_cast<size_t>(batch * pixels));
  ASSERT_EQ(b.image.size(), static_cast<size_t>(batch * pixels * 3));
  std::set<int32_t> classes;
  for (int64_t s = 0; s < batch; ++s) {
    int64_t ignored = 0;
    for (int64_t y = 0; y < b.size; ++y) {
      for (int64_t x = 0; x < b.size; ++x) {
        const int32_t label = b.labels[static_cast<size_t>(s * pixels + y * b.size + x)];
        const bool edge = y < border || x < border || y >= b.size - border || x >= b.size - border;
        EXPECT_EQ(label == 255, edge) << "sample " << s << " at " << y << ", " << x;
        if (label == 255) {
          ++ignored;
        } else {
          ASSERT_GE(label, 0);
          ASSERT_LT(label, b.classes);
          classes.insert(label);
        }
      }
    }
    EXPECT_EQ(ignored, pixels - (b.size - 2 * border) * (b.size - 2 * border)) << "sample " << s;
  }
  EXPECT_GE(classes.size(), 3u) << "background and objects of several classes";
  double sum = 0, sum_sq = 0;
  for (float v : b.image) sum += v, sum_sq += double(v) * v;
  const double mean = sum / b.image.size(), variance = sum_sq / b.image.size() - mean * mean;
  EXPECT_LT(std::abs(mean), 1.0);
  EXPECT_GT(variance, 0.1);
  EXPECT_LT(variance, 4.0);
}

TEST(DeepLabV3, SyntheticLabelsFullScale) { expect_segmentation_batch(2, WorkloadScale::kFull, 5); }

TEST(DeepLabV3, SyntheticLabelsTinyScale) { expect_segmentation_batch(12, WorkloadScale::kTiny, 1); }

TEST(DeepLabV3, SyntheticSamplesSliceAcrossRanks) {
  const Batch whole = synthesize(4, WorkloadScale::kTiny, 3, 0);
  const Batch second_half = synthesize(2, WorkloadScale::kTiny, 3, 2);  // rank 1 of 2 with batch 2
  const size_t pixels = static_cast<size_t>(whole.size * whole.size);
  EXPECT_EQ(std::vector<int32_t>(whole.labels.begin() + 2 * pixels, whole.labels.end()), second_half.labels);
  EXPECT_EQ(std::vector<float>(whole.image.begin() + 6 * pixels, whole.image.end()), second_half.image);
  EXPECT_EQ(whole.labels, synthesize(4, WorkloadScale::kTiny, 3, 0).labels) << "deterministic from the seed";
  EXPECT_NE(whole.labels, synthesize(4, WorkloadScale::kTiny, 4, 0).labels) << "another seed, other labels";
}

}  // namespace
}  // namespace sb
