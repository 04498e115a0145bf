// initialise_parameters (src/train/replica.h): N(0, 0.02) weights, normalization gains 1 and shifts 0, matched by
// "norm" in any case and nothing looser (BERT's MLM "transform" once matched a bare "orm" and started as all ones).
// Run: unit_tests --gtest_filter='ParameterInit*'.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/train/replica.h"

namespace sb {
namespace {

TEST(ParameterInit, NormalizationParametersByName) {
  for (const char* name : {"embeddings.LayerNorm.weight", "encoder.layers.0.self_attn_layer_norm.bias",
                           "conv.norm.weight", "cell_0.comb_iter_1_left.norm_sep_1.weight", "encoder.fc.weight_norm"}) {
    EXPECT_TRUE(is_normalization_parameter(name)) << name;
  }
  for (const char* name : {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                           "decoder.fc.weight", "embed_tokens.weight"}) {
    EXPECT_FALSE(is_normalization_parameter(name)) << name;
  }
}

TEST(ParameterInit, BertMlmTransformIsDrawnAndItsLayerNormIsOne) {
  auto device = make_cpu_device();
  ReplicaOptions options;
  options.workload = "bert_base";
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  auto replica = build_replica(options, *device, 1, 0, 7);
  auto values = [&](const std::string& name) {
    const TensorId id = replica->graph.find_tensor(name);
    std::vector<float> v(static_cast<size_t>(replica->graph.tensor(id).elements()));
    replica->executor->read_tensor(id, v.data(), v.size() * sizeof(float));
    return v;
  };
  const std::vector<float> dense = values("cls.predictions.transform.dense.weight");
  double sum = 0, squares = 0;
  for (float v : dense) {
    sum += v;
    squares += double(v) * v;
  }
  const double mean = sum / dense.size(), std = std::sqrt(squares / dense.size() - mean * mean);
  EXPECT_NEAR(std, 0.02, 0.004) << "drawn like every other weight";
  EXPECT_NEAR(mean, 0.0, 0.004);
  for (float v : values("cls.predictions.transform.LayerNorm.weight")) ASSERT_EQ(v, 1.0f);
  for (float v : values("cls.predictions.transform.LayerNorm.bias")) ASSERT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace sb
