// One small graph on both devices (STYLE.md rule 2): built by the same function on the CPU in fp32 and on the
// GPU in the dtype under test, the same parameters and int32 inputs written to both, one forward and
// backward pass, then the loss and every parameter's gradient compared by the relative L2 error
// ||gpu - cpu|| / ||cpu|| (per-dtype tolerances chosen by the caller). Used by the CNN ops' gpu tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "tests/gpu/every_tensor_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb::test {

// Builds the forward graph and returns the loss; parameters and int32 inputs are found again by name.
using GraphFunction = std::function<TensorId(GraphBuilder&)>;

// Fills int32 input `name` of `elements` entries (targets, labels); default: class ids in [0, 2], valid for the
// smallest head of these tests (3 classes).
using IntInputFunction = std::function<std::vector<int32_t>(const std::string& name, size_t elements)>;

struct BuiltGraph {
  Graph graph;
  TensorId loss = kNoTensor;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
  // keep_all: every activation lives to the step's end (every_tensor_check.h), so each node's outputs can be read.
  BuiltGraph(const GraphFunction& build, DType compute, bool keep_all = false) {
    GraphBuilder builder(graph, compute);
    loss = build(builder);
    gradients = append_backward(graph, loss);
    plan = keep_all ? plan_keeping_every_activation(graph) : plan_memory(graph);
  }
};

// Runs the check; `tolerance` bounds the loss's relative error and each gradient's relative L2 error, and with
// every_output each node's outputs in node order too (the first one off names the op that broke).
inline void expect_gpu_matches_cpu(const GraphFunction& build, DType compute, double tolerance,
                                   const IntInputFunction& int_values = nullptr, bool tf32 = false,
                                   bool every_output = false) {
  BuiltGraph reference(build, DType::kFloat32, every_output), tested(build, compute, every_output);
  CpuExecutor cpu(reference.graph, reference.plan);
  LossScaleConfig no_scaling;
  no_scaling.mode = LossScaling::kOff;  // gradients compared as they are
  std::unique_ptr<Executor> gpu = make_cuda_executor(tested.graph, tested.plan, tf32, no_scaling);
  uint32_t seed = 900;
  for (TensorId id : reference.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = reference.graph.tensor(id);
    const std::vector<float> values = random_normal(size_t(info.elements()), seed++, 0.5f);
    cpu.write_tensor(id, values.data(), info.bytes());
    gpu->write_tensor(tested.graph.find_tensor(info.name), values.data(), info.bytes());
  }
  for (TensorId id : reference.graph.tensors_with_role(TensorRole::kInput)) {
    const TensorInfo& info = reference.graph.tensor(id);
    ASSERT_EQ(info.dtype, DType::kInt32) << "floating inputs: make them parameters";
    const std::vector<int32_t> values = int_values ? int_values(info.name, size_t(info.elements()))
                                                   : random_ids(size_t(info.elements()), seed++, 0, 2);
    cpu.write_tensor(id, values.data(), info.bytes());
    gpu->write_tensor(tested.graph.find_tensor(info.name), values.data(), info.bytes());
  }
  cpu.run();
  gpu->run();
  if (every_output) expect_every_output_matches(reference.graph, cpu, tested.graph, *gpu, tolerance);
  float cpu_loss = 0, gpu_loss = 0;
  cpu.read_tensor(reference.loss, &cpu_loss, 4);
  gpu->read_tensor(tested.loss, &gpu_loss, 4);
  ASSERT_TRUE(std::isfinite(gpu_loss));
  EXPECT_NEAR(gpu_loss, cpu_loss, tolerance * std::fabs(cpu_loss)) << dtype_name(compute);
  for (const auto& [parameter, gradient] : reference.gradients) {
    const TensorInfo& info = reference.graph.tensor(parameter);
    std::vector<float> want(size_t(info.elements())), got(want.size());
    cpu.read_tensor(gradient, want.data(), info.bytes());
    gpu->read_tensor(tested.gradients.at(tested.graph.find_tensor(info.name)), got.data(), info.bytes());
    ASSERT_GT(l2_norm(want), 0.0) << info.name;
    EXPECT_EQ(count_non_finite(got), 0u) << info.name;
    EXPECT_LE(relative_l2(got, want), tolerance) << dtype_name(compute) << " gradient of " << info.name;
  }
}

}  // namespace sb::test
