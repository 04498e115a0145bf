// A whole tiny workload on the CUDA executor against the CPU reference: the same graph, inputs and initial
// weights; three plain-SGD steps (dropout masks drawn from the same Philox stream on both devices); the loss
// of every step and every parameter's gradient norm must agree. Skips when no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// fp32 on both devices; the CUDA side sums in other orders (warp reductions, atomics in the embedding
// gradient), so agreement is to rounding accumulated over a few dozen ops: 1e-3 relative is generous for
// fp32 and still catches any wrong kernel (those are off by O(1)).
constexpr double kLossTolerance = 1e-3;
constexpr double kGradientNormTolerance = 2e-3;


class CudaEngine : public ::testing::TestWithParam<const Workload*> {};

TEST_P(CudaEngine, ThreeStepsMatchTheCpuReference) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);  // makes GPU 0 current
  const Workload& workload = *GetParam();
  Graph graph;
  GraphBuilder builder(graph);
  const BuiltWorkload built = workload.build(builder, 4, WorkloadScale::kTiny);
  const auto gradients = append_backward(graph, built.loss);
  const MemoryPlan plan = plan_memory(graph);
  CpuExecutor cpu(graph, plan);
  std::unique_ptr<Executor> gpu = make_cuda_executor(graph, plan);
  for (Executor* e : {static_cast<Executor*>(&cpu), gpu.get()}) {
    workload.synthesize(graph, 11, [&](TensorId id, const void* data, size_t bytes) { e->write_tensor(id, data, bytes); });
  }
  uint32_t seed = 1;
  for (TensorId p : graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = graph.tensor(p);
    const bool gain = info.name.find("orm") != std::string::npos && info.name.find("bias") == std::string::npos;
    std::mt19937 random(seed++);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::vector<float> values(static_cast<size_t>(info.elements()));
    for (float& v : values) v = gain ? 1.0f + normal(random) : normal(random);
    cpu.write_tensor(p, values.data(), info.bytes());
    gpu->write_tensor(p, values.data(), info.bytes());
  }
  for (uint64_t step = 0; step < 3; ++step) {
    cpu.set_random_stream(5, step);
    gpu->set_random_stream(5, step);
    cpu.run();
    gpu->run();
    float cpu_loss = 0, gpu_loss = 0;
    cpu.read_tensor(built.loss, &cpu_loss, 4);
    gpu->read_tensor(built.loss, &gpu_loss, 4);
    ASSERT_TRUE(std::isfinite(gpu_loss));
    EXPECT_NEAR(gpu_loss, cpu_loss, kLossTolerance * std::fabs(cpu_loss)) << workload.info().name << " step " << step;
    // Gradients that are zero in exact arithmetic (an attention key bias: softmax ignores a shift shared by
    // all keys) are rounding noise on both devices, so each norm is compared within the relative tolerance
    // plus a floor of 1e-5 of the largest gradient norm of the step.
    std::map<TensorId, std::vector<float>> cpu_gradients, gpu_gradients;
    double largest = 0;
    for (const auto& [parameter, gradient] : gradients) {
      const TensorInfo& info = graph.tensor(parameter);
      cpu_gradients[parameter].resize(static_cast<size_t>(info.elements()));
      gpu_gradients[parameter].resize(static_cast<size_t>(info.elements()));
      cpu.read_tensor(gradient, cpu_gradients[parameter].data(), info.bytes());
      gpu->read_tensor(gradient, gpu_gradients[parameter].data(), info.bytes());
      largest = std::max(largest, test::l2_norm(cpu_gradients[parameter]));
    }
    for (const auto& [parameter, gradient] : gradients) {
      const TensorInfo& info = graph.tensor(parameter);
      const double n_cpu = test::l2_norm(cpu_gradients[parameter]), n_gpu = test::l2_norm(gpu_gradients[parameter]);
      EXPECT_NEAR(n_gpu, n_cpu, kGradientNormTolerance * n_cpu + 1e-5 * largest) << info.name << " step " << step;
      // The same SGD update on both devices, from the CPU's weights and gradients (keeps them in lock-step).
      std::vector<float> w(cpu_gradients[parameter].size());
      cpu.read_tensor(parameter, w.data(), info.bytes());
      for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.3f * cpu_gradients[parameter][i];
      cpu.write_tensor(parameter, w.data(), info.bytes());
      gpu->write_tensor(parameter, w.data(), info.bytes());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, CudaEngine, ::testing::ValuesIn(workload_registry()),
                         [](const auto& info) { return info.param->info().name; });

}  // namespace
}  // namespace sb
