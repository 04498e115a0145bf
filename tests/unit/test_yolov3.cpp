// yolov3 against shared/WORKLOADS.md §3: 61,949,149 parameters (40,584,928 in Darknet-53, darknet layers 0-74),
// 75 convs of which the three 1 x 1 output convs alone have a bias and no BatchNorm, 23 residual adds, two
// nearest upsamples and route concats of 768 and 384 channels, heads of 255 channels at 19², 38², 76², and
// 70.35 GMAC per 608² image; the reference optimizer is darknet's; synthetic boxes are valid and a batch of
// N·b splits into the ranks' batches of b. (Gradients and training of the tiny graph: test_workloads.cpp.)
// Run: unit_tests --gtest_filter='Yolov3*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

const Workload& yolov3() { return find_workload("yolov3"); }

std::vector<int64_t> shape_of(const Graph& graph, TensorId id) { return graph.tensor(id).shape; }

TEST(Yolov3, FullScaleGraphAsSpecified) {
  EXPECT_EQ(yolov3().info().unit, "images");
  EXPECT_EQ(yolov3().info().default_batch, 16);
  EXPECT_EQ(yolov3().info().full_parameters, 61949149);
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = yolov3().build(builder, 16, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 61949149);
  int64_t backbone = 0;  // darknet layers 0-74
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const std::string& name = graph.tensor(p).name;
    ASSERT_EQ(name.rfind("layers.", 0), 0u) << name;
    if (std::stoi(name.substr(7)) <= 74) backbone += graph.tensor(p).elements();
  }
  EXPECT_EQ(backbone, 40584928);
  EXPECT_EQ(shape_of(graph, graph.find_tensor("images")), (std::vector<int64_t>{16, 608, 608, 3}));

  std::map<std::string, int> count;
  std::vector<int64_t> strided_outputs, concat_channels;
  int output_convs = 0;
  for (const Node& node : graph.nodes()) {
    ++count[node.op];
    const NodeAttributes& a = node.attributes;
    if (node.op == "conv2d") {
      const std::vector<int64_t> w = shape_of(graph, node.inputs[1]);
      for (const char* side : {"pad_top", "pad_bottom", "pad_left", "pad_right"}) {
        EXPECT_EQ(a.at(side), double(w[1] / 2)) << side;  // darknet pad=1: kernel / 2 on every side
      }
      if (a.at("stride_h") == 2) strided_outputs.push_back(shape_of(graph, node.outputs[0])[1]);
      if (node.inputs.size() == 3) {
        ++output_convs;
        EXPECT_EQ(w, (std::vector<int64_t>{255, 1, 1, w[3]}));
      }
    } else if (node.op == "batchnorm") {
      EXPECT_EQ(a.at("activation"), double(static_cast<int>(BatchNormOptions::Activation::kLeakyRelu)));
      EXPECT_EQ(a.at("slope"), 0.1);
    } else if (node.op == "concat") {
      concat_channels.push_back(shape_of(graph, node.outputs[0])[3]);
    } else if (node.op == "yolo_loss") {
      EXPECT_EQ(shape_of(graph, node.inputs[0]), (std::vector<int64_t>{16, 19, 19, 255}));
      EXPECT_EQ(shape_of(graph, node.inputs[1]), (std::vector<int64_t>{16, 38, 38, 255}));
      EXPECT_EQ(shape_of(graph, node.inputs[2]), (std::vector<int64_t>{16, 76, 76, 255}));
      EXPECT_EQ(shape_of(graph, node.inputs[3]), (std::vector<int64_t>{16, 8, 5}));
      EXPECT_EQ(a.at("classes"), 80);
    }
  }
  EXPECT_EQ(count["conv2d"], 75);
  EXPECT_EQ(output_convs, 3);
  EXPECT_EQ(count["batchnorm"], 72);
  EXPECT_EQ(count["add"], 23);
  EXPECT_EQ(count["upsample_nearest"], 2);
  EXPECT_EQ(concat_channels, (std::vector<int64_t>{768, 384}));
  EXPECT_EQ(count["yolo_loss"], 1);
  EXPECT_EQ(strided_outputs, (std::vector<int64_t>{304, 152, 76, 38, 19}));
  EXPECT_EQ(count["leaky_relu"] + count["relu"] + count["cast"], 0);  // fused into BatchNorm; fp32 graph

  EXPECT_EQ(built.units_per_step, 16.0);
  // The analytic count is the graph's own convolutions, per image, and WORKLOADS.md's measured 70.35 GMAC.
  EXPECT_NEAR(built.forward_flops_per_unit, matmul_flops(graph, false) / 16, 1e-9 * built.forward_flops_per_unit);
  EXPECT_NEAR(built.forward_flops_per_unit / 2, 70.35e9, 0.005 * 70.35e9);
}

TEST(Yolov3, TinyScaleFlopsAreTheGraphs) {
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = yolov3().build(builder, 3, WorkloadScale::kTiny);
  ASSERT_GT(built.forward_flops_per_unit, 0);
  EXPECT_NEAR(built.forward_flops_per_unit, matmul_flops(graph, false) / 3, 1e-9 * built.forward_flops_per_unit);
}

TEST(Yolov3, ReferenceOptimizerIsDarknets) {  // yolov3.cfg: momentum=0.9 decay=0.0005; lr: burn-in (optimizer.cpp)
  const OptimizerSettings s = find_workload("yolov3").reference_optimizer();
  EXPECT_EQ(s.kind, OptimizerKind::kSgdMomentum);
  EXPECT_FLOAT_EQ(s.learning_rate, 1e-6f);
  EXPECT_FLOAT_EQ(s.momentum, 0.9f);
  EXPECT_FLOAT_EQ(s.weight_decay, 5e-4f);
  EXPECT_EQ(s.max_grad_norm, 0.0f);
}

// The inputs synthesised for a graph of `batch` images starting at `first_sample`, by name.
std::map<std::string, std::vector<float>> synthesize(int64_t batch, WorkloadScale scale, uint64_t seed,
                                                     int64_t first_sample) {
  Graph graph;
  GraphBuilder builder(graph);
  yolov3().build(builder, batch, scale);
  std::map<std::string, std::vector<float>> inputs;
  yolov3().synthesize(graph, seed, first_sample, [&](TensorId id, const void* data, size_t bytes) {
    EXPECT_EQ(bytes, graph.tensor(id).bytes()) << graph.tensor(id).name;
    std::vector<float>& values = inputs[graph.tensor(id).name];
    values.resize(bytes / sizeof(float));
    std::memcpy(values.data(), data, bytes);
  });
  return inputs;
}

TEST(Yolov3, SyntheticBoxesLieInTheImage) {
  const auto inputs = synthesize(16, WorkloadScale::kFull, 3, 0);
  const std::vector<float>& boxes = inputs.at("truth_boxes");
  ASSERT_EQ(boxes.size(), 16u * 8 * 5);
  std::map<int, int> classes;
  double smallest = 1, largest = 0;
  for (size_t b = 0; b < boxes.size(); b += 5) {
    const float cls = boxes[b], cx = boxes[b + 1], cy = boxes[b + 2], w = boxes[b + 3], h = boxes[b + 4];
    EXPECT_EQ(cls, float(int(cls)));
    EXPECT_GE(cls, 0);
    EXPECT_LT(cls, 80);
    ++classes[int(cls)];
    EXPECT_GT(w, 0.0199f);
    EXPECT_LT(w, 0.8001f);
    EXPECT_GT(h, 0.0199f);
    EXPECT_LT(h, 0.8001f);
    EXPECT_GE(cx - w / 2, -1e-6f);
    EXPECT_LE(cx + w / 2, 1 + 1e-6f);
    EXPECT_GE(cy - h / 2, -1e-6f);
    EXPECT_LE(cy + h / 2, 1 + 1e-6f);
    smallest = std::min<double>(smallest, std::min(w, h));
    largest = std::max<double>(largest, std::max(w, h));
  }
  EXPECT_GT(classes.size(), 30u);  // 128 draws from 80 classes
  EXPECT_LT(smallest, 0.05);       // boxes for the stride-8 head's anchors (10 to 33 pixels of 608)...
  EXPECT_GT(largest, 0.4);         // ...and for the stride-32 head's (116 to 373)
  const std::vector<float>& pixels = inputs.at("images");
  double sum = 0;
  for (float p : pixels) {
    ASSERT_GE(p, 0.0f);
    ASSERT_LT(p, 1.0f);
    sum += p;
  }
  EXPECT_NEAR(sum / double(pixels.size()), 0.5, 1e-3);
}

// Rank r with batch b holds samples r·b .. r·b + b - 1 of the batch one rank with N·b holds (the --check invariant).
TEST(Yolov3, RankBatchesAreRowsOfTheCombinedBatch) {
  const auto all = synthesize(4, WorkloadScale::kTiny, 11, 0);
  const auto second = synthesize(2, WorkloadScale::kTiny, 11, 2);
  for (const auto& [name, values] : second) {
    const std::vector<float>& whole = all.at(name);
    ASSERT_EQ(whole.size(), 2 * values.size()) << name;
    EXPECT_TRUE(std::equal(values.begin(), values.end(), whole.begin() + whole.size() / 2)) << name;
  }
  EXPECT_NE(synthesize(2, WorkloadScale::kTiny, 12, 2).at("truth_boxes"), second.at("truth_boxes"));
}

}  // namespace
}  // namespace sb
