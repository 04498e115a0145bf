// A small graph around the ops under test, run on the CPU device, whose gradients are checked against
// finite differences of the whole loss (STYLE.md rule 5): every floating leaf is a parameter with fresh
// random values, the op's output (viewed as rows x classes) feeds softmax_cross_entropy against random
// targets, autodiff appends the backward pass, and each parameter's gradient is compared with Richardson-
// extrapolated central differences (the h² terms cancel, so kinks such as ReLU's or max-pooling's ties are
// rarely straddled by the smaller step). Used by the test_engine_*.cpp files of the CNN and SAN ops.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"

namespace sb::test {

// Central differences with steps h and 2h combined by Richardson extrapolation (the h² terms cancel). The fp32
// loss carries ~1e-7 of rounding noise, i.e. ~1e-4 / (h / 1e-3) in each numeric derivative: h = 1e-3 suits
// graphs with kinks (ReLU, max) and gradients of O(1e-2) per element; smooth graphs whose gradients are
// small (a mean over many pixels) take h = 1e-2, where the truncation left is O(h⁴). 1e-2 relative on the norm
// is ample either way, and a wrong gradient is off by O(1).
constexpr double kOpGraphGradientTolerance = 1e-2;
constexpr double kOpGraphStep = 1e-3;
constexpr double kOpGraphSmoothStep = 1e-2;

struct OpGraph {
  Graph graph;
  GraphBuilder b{graph};
  std::vector<std::pair<TensorId, std::vector<float>>> parameters;
  std::vector<std::pair<TensorId, std::vector<int32_t>>> int_inputs;
  std::vector<std::pair<TensorId, std::vector<uint8_t>>> masks;
  std::vector<std::pair<TensorId, std::vector<float>>> float_inputs;  // data: written once, as the trainer does
  TensorId loss = kNoTensor;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
  std::unique_ptr<CpuExecutor> e;
  uint32_t seed = 700;

  TensorId parameter(const std::string& name, std::vector<int64_t> shape, float stddev = 1.0f, float mean = 0.0f) {
    const TensorId id = b.parameter(name, shape);
    std::vector<float> values = random_normal(static_cast<size_t>(graph.tensor(id).elements()), seed++, stddev);
    for (float& v : values) v += mean;
    parameters.push_back({id, values});
    return id;
  }
  std::vector<float>& values(TensorId parameter) {
    for (auto& [id, v] : parameters) {
      if (id == parameter) return v;
    }
    throw UsageError("not a parameter of the test graph");
  }

  // The loss over `logits` (any shape; the last dimension is the classes). `kept` tensors stay live to the
  // end of the step so the test can read them after run().
  void finish(TensorId logits, const std::vector<TensorId>& kept = {}) {
    for (TensorId id : kept) graph.tensor(id).read_after_step = true;
    graph.tensor(logits).read_after_step = true;
    const int64_t classes = graph.tensor(logits).shape.back(), rows = graph.tensor(logits).elements() / classes;
    const TensorId targets = b.input("targets", {rows}, DType::kInt32);
    int_inputs.push_back({targets, random_ids(static_cast<size_t>(rows), seed++, 0, int32_t(classes - 1))});
    loss = b.softmax_cross_entropy(b.reshape(logits, {rows, classes}), targets, 0.0, -1);
    finish_with_loss(loss);
  }
  // For a graph whose loss op is the op under test.
  void finish_with_loss(TensorId the_loss) {
    loss = the_loss;
    gradients = append_backward(graph, loss);
    plan = plan_memory(graph);
    e = std::make_unique<CpuExecutor>(graph, plan);
    for (const auto& [id, v] : int_inputs) std::memcpy(e->i32(id), v.data(), v.size() * sizeof(int32_t));
    for (const auto& [id, v] : masks) std::memcpy(e->u8(id), v.data(), v.size());
    for (const auto& [id, v] : float_inputs) std::memcpy(e->f32(id), v.data(), v.size() * sizeof(float));
    write_parameters();
  }
  TensorId mask(const std::string& name, int64_t batch, int64_t length, const std::vector<uint8_t>& values) {
    const TensorId id = b.input(name, {batch, length}, DType::kUInt8);
    masks.push_back({id, values});
    return id;
  }
  TensorId float_input(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
    const TensorId id = b.input(name, std::move(shape));
    float_inputs.push_back({id, std::move(values)});
    return id;
  }
  TensorId int_input(const std::string& name, std::vector<int64_t> shape, std::vector<int32_t> values) {
    const TensorId id = b.input(name, std::move(shape), DType::kInt32);
    int_inputs.push_back({id, std::move(values)});
    return id;
  }
  void write_parameters() {
    for (const auto& [id, v] : parameters) std::memcpy(e->f32(id), v.data(), v.size() * sizeof(float));
  }
  double forward_loss() {
    write_parameters();
    e->run_nodes(0, e->forward_node_count());
    return *e->f32(loss);
  }
  std::vector<float> read(TensorId id) const {
    const float* p = static_cast<const CpuExecutor&>(*e).f32(id);
    return std::vector<float>(p, p + graph.tensor(id).elements());
  }

  // Forward and backward, then every parameter's gradient against Richardson-extrapolated finite differences.
  // A parameter in `zero_gradient` has a gradient of 0 in exact arithmetic: both sides must be small instead.
  void expect_gradients_match(double tolerance = kOpGraphGradientTolerance, double h = kOpGraphStep,
                              const std::vector<TensorId>& zero_gradient = {}) {
    write_parameters();
    e->run();
    ASSERT_TRUE(std::isfinite(*e->f32(loss)));
    for (auto& [id, v] : parameters) {
      const std::string& name = graph.tensor(id).name;
      const GradientComparison cmp =
          compare_with_finite_differences(v, [this] { return forward_loss(); }, read(gradients.at(id)), h, true);
      if (std::find(zero_gradient.begin(), zero_gradient.end(), id) != zero_gradient.end()) {
        EXPECT_LE(cmp.analytic_norm, 1e-6) << name;
        EXPECT_LE(cmp.numeric_norm, 1e-3) << name;
        continue;
      }
      EXPECT_GT(cmp.analytic_norm, 1e-6) << name << ": the gradient is zero";
      EXPECT_LE(cmp.relative_error, tolerance) << name << ": " << cmp.describe();
    }
    write_parameters();
  }
};

}  // namespace sb::test
