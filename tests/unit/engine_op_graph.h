// A small graph around the ops under test, run on the CPU device, whose gradients are checked against
// finite differences of the whole loss (STYLE.md rule 5): every floating leaf is a parameter with fresh
// random values, the op's output (viewed as rows x classes) feeds softmax_cross_entropy against random
// targets, autodiff appends the backward pass, and each parameter's gradient is compared with Richardson-
// extrapolated central differences (the h² terms cancel, so kinks such as ReLU's or max-pooling's ties are
// rarely straddled by the smaller step). Used by the test_engine_*.cpp files of the CNN ops.
#pragma once

#include <gtest/gtest.h>

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
    write_parameters();
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

  // Forward and backward, then every parameter's gradient against finite differences.
  void expect_gradients_match(double tolerance = kOpGraphGradientTolerance, double h = kOpGraphStep) {
    write_parameters();
    e->run();
    ASSERT_TRUE(std::isfinite(*e->f32(loss)));
    for (auto& [id, v] : parameters) {
      const std::string& name = graph.tensor(id).name;
      const std::vector<float> analytic = read(gradients.at(id));
      auto numeric_at = [&](size_t i, double h) {
        const float saved = v[i];
        v[i] = static_cast<float>(saved + h);
        const double up = forward_loss();
        v[i] = static_cast<float>(saved - h);
        const double down = forward_loss();
        v[i] = saved;
        return (up - down) / (2 * h);
      };
      double diff_sq = 0, num_sq = 0, ana_sq = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        const double numeric = (4 * numeric_at(i, h) - numeric_at(i, 2 * h)) / 3;
        diff_sq += (numeric - analytic[i]) * (numeric - analytic[i]);
        num_sq += numeric * numeric;
        ana_sq += double(analytic[i]) * analytic[i];
      }
      const double scale = std::sqrt(std::max(num_sq, ana_sq));
      EXPECT_GT(std::sqrt(ana_sq), 1e-6) << name << ": the gradient is zero";
      EXPECT_LE(std::sqrt(diff_sq) / scale, tolerance)
          << name << ": numeric norm " << std::sqrt(num_sq) << " analytic norm " << std::sqrt(ana_sq);
    }
    write_parameters();
  }
};

}  // namespace sb::test
