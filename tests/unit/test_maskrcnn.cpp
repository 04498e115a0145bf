// maskrcnn against shared/WORKLOADS.md §6: 44,125,173 trained and 222,400 frozen parameters (44,347,573), by module
// as the spec lists them; the FPN's map sizes and 268,569 anchors per 800 x 1344 image; static counts (2,000
// proposals, 512 RoIs and 64 mask RoIs per image); no backward pass below res3; the reference optimizer; synthetic
// boxes inside the image, classes in range, and a batch of N·b that splits into the ranks' batches of b.
// (Gradients and training of the tiny graph: test_workloads.cpp.) Run: unit_tests --gtest_filter='MaskRcnn*'.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/graph.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

const Workload& maskrcnn() { return find_workload("maskrcnn"); }

std::vector<int64_t> shape_of(const Graph& graph, const std::string& name) {
  return graph.tensor(graph.find_tensor(name)).shape;
}

TEST(MaskRcnn, FullScaleParameterCountsByModule) {
  EXPECT_EQ(maskrcnn().info().unit, "images");
  EXPECT_EQ(maskrcnn().info().default_batch, 16);
  EXPECT_EQ(maskrcnn().info().frozen_parameters, 222400);
  Graph graph;
  GraphBuilder builder(graph);
  maskrcnn().build(builder, 2, WorkloadScale::kFull);
  EXPECT_EQ(graph.parameter_count(), 44125173);
  EXPECT_EQ(graph.frozen_parameter_count(), 222400);
  EXPECT_EQ(graph.parameter_count() + graph.frozen_parameter_count(), 44347573);
  std::map<std::string, int64_t> modules;
  auto module_of = [](const std::string& name) {
    for (const char* prefix : {"backbone.body", "backbone.fpn", "rpn", "roi_heads.box_head", "roi_heads.box_predictor",
                               "roi_heads.mask_head", "roi_heads.mask_predictor"}) {
      if (name.rfind(prefix, 0) == 0) return std::string(prefix);
    }
    return std::string("other");
  };
  for (const TensorInfo& info : graph.tensors()) {
    if (info.role == TensorRole::kParameter || info.frozen_weight) modules[module_of(info.name)] += info.elements();
  }
  EXPECT_EQ(modules["backbone.body"], 23454912);
  EXPECT_EQ(modules["backbone.fpn"], 3344384);
  EXPECT_EQ(modules["rpn"], 593935);
  EXPECT_EQ(modules["roi_heads.box_head"], 13895680);
  EXPECT_EQ(modules["roi_heads.box_predictor"], 415125);
  EXPECT_EQ(modules["roi_heads.mask_head"], 2360320);
  EXPECT_EQ(modules["roi_heads.mask_predictor"], 283217);
  EXPECT_EQ(modules.count("other"), 0u);
  // The frozen ones are conv1 and layer1, inputs of the graph.
  for (const TensorInfo& info : graph.tensors()) {
    if (!info.frozen_weight) continue;
    EXPECT_TRUE(info.name.rfind("backbone.body.conv1", 0) == 0 || info.name.rfind("backbone.body.layer1", 0) == 0)
        << info.name;
    EXPECT_EQ(info.role, TensorRole::kInput);
  }
}

TEST(MaskRcnn, FullScaleShapesAndStaticCounts) {
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = maskrcnn().build(builder, 2, WorkloadScale::kFull);
  EXPECT_EQ(shape_of(graph, "images"), (std::vector<int64_t>{2, 800, 1344, 3}));
  std::vector<std::vector<int64_t>> fpn_maps;
  int64_t anchors = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op == "roi_align" && fpn_maps.empty()) {
      for (size_t l = 0; l + 1 < node.inputs.size(); ++l) fpn_maps.push_back(graph.tensor(node.inputs[l]).shape);
      EXPECT_EQ(node.attributes.at("sampling_ratio"), 2);
      EXPECT_EQ(node.attributes.at("aligned"), 0) << "torchvision's MultiScaleRoIAlign";
      EXPECT_EQ(graph.tensor(node.outputs[0]).shape, (std::vector<int64_t>{2 * 512, 7, 7, 256}));
    }
    if (node.op == "anchor_grid") anchors = graph.tensor(node.outputs[0]).shape[0];
    if (node.op == "rpn_proposals") {
      EXPECT_EQ(graph.tensor(node.outputs[0]).shape, (std::vector<int64_t>{2, 2000, 4}));
      EXPECT_EQ(node.attributes.at("pre_nms_top_n"), 2000);
      EXPECT_NEAR(node.attributes.at("nms_threshold"), 0.7, 1e-12);
      EXPECT_EQ(node.attributes.at("decode"), 1);
    }
    if (node.op == "roi_sample") {
      EXPECT_EQ(graph.tensor(node.outputs[0]).shape, (std::vector<int64_t>{2 * 512, 5}));
      EXPECT_EQ(graph.tensor(node.outputs[5]).shape, (std::vector<int64_t>{2 * 64, 5}));
      EXPECT_NEAR(node.attributes.at("positive_fraction"), 0.25, 1e-12);
    }
  }
  ASSERT_EQ(fpn_maps.size(), 4u);
  EXPECT_EQ(fpn_maps[0], (std::vector<int64_t>{2, 200, 336, 256}));
  EXPECT_EQ(fpn_maps[1], (std::vector<int64_t>{2, 100, 168, 256}));
  EXPECT_EQ(fpn_maps[2], (std::vector<int64_t>{2, 50, 84, 256}));
  EXPECT_EQ(fpn_maps[3], (std::vector<int64_t>{2, 25, 42, 256}));
  EXPECT_EQ(anchors, 268569);
  EXPECT_EQ(shape_of(graph, "roi_heads.mask_predictor.mask_fcn_logits.weight"), (std::vector<int64_t>{81, 1, 1, 256}));
  // ConvTranspose2d(256, 256, 2, stride 2): PyTorch's (C_in, C_out, 2, 2) as the engine's (C_in, 2, 2, C_out).
  EXPECT_EQ(shape_of(graph, "roi_heads.mask_predictor.conv5_mask.weight"), (std::vector<int64_t>{256, 2, 2, 256}));
  // Forward multiply-adds per image (convs, FC layers, RPN head, transposed conv), against the spec's 243 GMAC
  // for torchvision's stride-in-3x3 layout.
  EXPECT_GT(built.forward_flops_per_unit / 2, 200e9);
  EXPECT_LT(built.forward_flops_per_unit / 2, 250e9);
}

// conv1 and res2 are frozen: no conv of theirs and no conv reading their output computes an input gradient, and
// none computes a weight gradient.
TEST(MaskRcnn, NoBackwardPassBelowRes3) {
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = maskrcnn().build(builder, 1, WorkloadScale::kFull);
  const auto gradients = append_backward(graph, built.loss);
  EXPECT_EQ(gradients.size(), graph.tensors_with_role(TensorRole::kParameter).size());
  std::set<TensorId> frozen_outputs;  // outputs of frozen convs and of the stem's pooling
  for (const Node& node : graph.nodes()) {
    if (node.backward) continue;
    bool frozen = false;
    for (TensorId in : node.inputs) frozen = frozen || graph.tensor(in).frozen_weight || frozen_outputs.count(in) != 0;
    bool trained = false;
    for (TensorId in : node.inputs) trained = trained || graph.tensor(in).role == TensorRole::kParameter;
    if (frozen && !trained) frozen_outputs.insert(node.outputs.begin(), node.outputs.end());
  }
  int backward_data = 0, frozen_backward = 0;
  for (const Node& node : graph.nodes()) {
    if (!node.backward) continue;
    backward_data += node.op == "conv2d_backward_data";
    for (TensorId out : node.outputs) {
      const std::string& name = graph.tensor(out).name;
      frozen_backward += name.find("layer1") != std::string::npos || name.find("body.conv1") != std::string::npos;
    }
  }
  EXPECT_GT(backward_data, 0);
  EXPECT_EQ(frozen_backward, 0);
  // The first res3 convs read C2 (frozen): their backward passes compute the weight gradient only.
  for (const Node& node : graph.nodes()) {
    if (node.op == "conv2d_backward_data") {
      EXPECT_EQ(frozen_outputs.count(node.outputs[0]), 0u);
    }
  }
}

TEST(MaskRcnn, ReferenceOptimizer) {
  // maskrcnn-benchmark R-50-FPN 1x
  const OptimizerSettings s = find_workload("maskrcnn").reference_optimizer();
  EXPECT_EQ(s.kind, OptimizerKind::kSgdMomentum);
  EXPECT_FLOAT_EQ(s.learning_rate, 0.02f / 3.0f);  // BASE_LR 0.02 at the warm-up's start (factor 1/3)
  EXPECT_FLOAT_EQ(s.momentum, 0.9f);
  EXPECT_FLOAT_EQ(s.weight_decay, 1e-4f);
}

// Synthetic inputs of the tiny graph: boxes inside the 64 x 64 image, classes 1 .. 2, sample ids, frozen weights
// the same whatever the batch, and rows r·b .. r·b + b - 1 of a batch of N·b equal to rank r's batch of b.
TEST(MaskRcnn, SyntheticDataSplitsAcrossRanks) {
  auto inputs = [](int64_t batch, int64_t first) {
    auto graph = std::make_shared<Graph>();
    GraphBuilder builder(*graph);
    maskrcnn().build(builder, batch, WorkloadScale::kTiny);
    auto values = std::make_shared<std::map<std::string, std::vector<char>>>();
    maskrcnn().synthesize(*graph, 5, first, [&](TensorId id, const void* data, size_t bytes) {
      EXPECT_EQ(bytes, graph->tensor(id).bytes()) << graph->tensor(id).name;
      const char* p = static_cast<const char*>(data);
      (*values)[graph->tensor(id).name] = std::vector<char>(p, p + bytes);
    });
    for (const TensorInfo& info : graph->tensors()) {
      if (info.role == TensorRole::kInput) {
        EXPECT_EQ(values->count(info.name), 1u) << info.name << " not written";
      }
    }
    return values;
  };
  const auto whole = inputs(4, 0), part = inputs(2, 2);
  for (const std::string name : {"images", "gt_boxes", "gt_classes", "sample_ids"}) {
    const std::vector<char>& w = whole->at(name);
    const std::vector<char>& p = part->at(name);
    ASSERT_EQ(w.size(), 2 * p.size()) << name;
    EXPECT_EQ(std::memcmp(w.data() + p.size(), p.data(), p.size()), 0) << name;
  }
  EXPECT_EQ(whole->at("backbone.body.conv1.weight"), part->at("backbone.body.conv1.weight"));
  const auto* boxes = reinterpret_cast<const float*>(whole->at("gt_boxes").data());
  const auto* classes = reinterpret_cast<const int32_t*>(whole->at("gt_classes").data());
  for (int k = 0; k < 4 * 3; ++k) {
    EXPECT_GE(boxes[k * 4], 0.0f);
    EXPECT_GT(boxes[k * 4 + 2], boxes[k * 4]);
    EXPECT_LE(boxes[k * 4 + 3], 64.0f);
    EXPECT_GE(classes[k], 1);
    EXPECT_LE(classes[k], 2);
  }
  EXPECT_EQ(reinterpret_cast<const int32_t*>(part->at("sample_ids").data())[1], 3);
}

}  // namespace
}  // namespace sb
