// Dynamic loss scaling on the GPU (include/scalebench/loss_scale.h, src/cuda/optimizer.h): the loss-scaled
// optimizer step against the CPU's unscaled step, an overflow skipping the step (parameters and state
// bit-identical) and halving the scale, growth after the growth interval, and the CUDA executor's fp16 path —
// loss scaling on for fp16 graphs only, an inf in the (all-reduced) gradients skipped, and a tiny workload
// trained on a replica as `scalebench run` builds it, whose loss falls. Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaLossScale*:CudaFp16Engine*'
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/loss_scale.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "src/cpu/optimizer.h"
#include "src/cuda/optimizer.h"
#include "src/train/replica.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;

// As test_cuda_optimizer.cpp: fp32 per-element arithmetic against the CPU's double, a few steps of O(1e-3)
// updates, ~1e-6 relative; 1e-3 keeps values near zero from dominating. Unscaling by a power of two is exact,
// so loss scaling adds no error of its own.
constexpr double kRelative = 1e-5, kFloor = 1e-3;

double worst_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = got.size() == want.size() ? 0 : std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / (std::fabs(want[i]) + kFloor));
  }
  return worst;
}

std::vector<float> scaled(const std::vector<float>& g, float scale) {
  std::vector<float> out(g);
  for (float& v : out) v *= scale;  // exact: a power of two
  return out;
}

// Parameters, gradients, optimizer state and the norm scratch of one flat optimizer problem on the device,
// with the CPU's copies beside them.
struct Problem {
  int64_t n;
  OptimizerSettings settings;
  std::vector<float> p, state;
  std::vector<double> scratch;
  CudaArray<float> p_d, g_d, state_d;
  CudaArray<double> scratch_d;
  CudaArray<LossScaleState> scale_d;

  Problem(int64_t count, const OptimizerSettings& s, const LossScaleConfig& config)
      : n(count),
        settings(s),
        p(test::random_normal(static_cast<size_t>(count), 1)),
        state(static_cast<size_t>(optimizer_state_buffers(s.kind) * cpu::optimizer_state_stride(count)), 0.0f),
        scratch(cpu::kGradNormScratchDoubles),
        p_d(p),
        g_d(static_cast<size_t>(count)),
        state_d(state),
        scratch_d(static_cast<size_t>(cpu::kGradNormScratchDoubles)),
        scale_d(std::vector<LossScaleState>{initial_loss_scale_state(config)}) {}

  LossScaleState loss_scale() const { return scale_d.download()[0]; }

  // One loss-scaled GPU step on `device_grads` (the gradients as the backward pass left them: S times the true).
  void gpu_step(const std::vector<float>& device_grads, int64_t step, const LossScaleConfig& config) {
    g_d.upload(device_grads);
    cuda::grad_norm_squared(g_d.get(), n, scratch_d.get(), nullptr);
    cuda::optimizer_step(p_d.get(), g_d.get(), state_d.get(), n, settings, cuda::eager_value(step), scratch_d.get(),
                         nullptr, scale_d.get(), config);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void cpu_step(const std::vector<float>& grads, int64_t step) {
    cpu::grad_norm_squared(grads.data(), n, scratch.data());
    cpu::optimizer_step(p.data(), grads.data(), state.data(), n, settings, step, scratch.data());
  }
};

OptimizerSettings adamw_clipped() {
  OptimizerSettings s = default_optimizer(OptimizerKind::kAdamW);
  s.learning_rate = 1e-3f;
  s.max_grad_norm = 1.0f;  // gradients of N(0, 0.5) over 10^6 elements have norm ~500: clipping is active
  return s;
}

TEST(CudaLossScale, ScaledGradientsGiveTheCpusUnscaledStep) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (OptimizerSettings s : {adamw_clipped(), default_optimizer(OptimizerKind::kSgdMomentum)}) {
    SCOPED_TRACE(describe_optimizer(s));
    const LossScaleConfig config;
    Problem problem(1000003, s, config);  // float4 path plus a scalar tail
    for (int step = 1; step <= 3; ++step) {
      const std::vector<float> g = test::random_normal(static_cast<size_t>(problem.n), 100 + step, 0.5f);
      problem.gpu_step(scaled(g, problem.loss_scale().scale), step, config);
      problem.cpu_step(g, step);
    }
    EXPECT_LT(worst_relative(problem.p_d.download(), problem.p), kRelative);
    EXPECT_LT(worst_relative(problem.state_d.download(), problem.state), kRelative);
    const LossScaleState after = problem.loss_scale();
    EXPECT_EQ(after.scale, 65536.0f);
    EXPECT_EQ(after.growth_tracker, 3);
    EXPECT_EQ(after.skipped_steps, 0);
  }
}

// An inf or a NaN anywhere: nothing written, the scale halved, the skip counted; the next finite step is the
// optimizer's first (bias correction at t = 1, as torch.optim's step count, which a skipped step leaves alone).
TEST(CudaLossScale, OverflowSkipsTheStepAndHalvesTheScale) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const LossScaleConfig config;
  Problem problem(4099, adamw_clipped(), config);
  problem.state_d.upload(std::vector<float>(problem.state.size(), 0.25f));  // non-zero: a write would show
  std::fill(problem.state.begin(), problem.state.end(), 0.25f);
  const std::vector<float> p_before = problem.p_d.download(), state_before = problem.state_d.download();
  const std::vector<float> g = test::random_normal(static_cast<size_t>(problem.n), 7, 0.5f);
  const float bad[] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                       -std::numeric_limits<float>::infinity()};
  float expected_scale = 65536.0f;
  for (int i = 0; i < 3; ++i) {
    std::vector<float> overflowed = scaled(g, problem.loss_scale().scale);
    overflowed[static_cast<size_t>(1000 * i + 17)] = bad[i];
    problem.gpu_step(overflowed, i + 1, config);
    expected_scale *= 0.5f;
    const LossScaleState state = problem.loss_scale();
    EXPECT_EQ(state.scale, expected_scale) << "after bad step " << i;
    EXPECT_EQ(state.skipped_steps, i + 1);
    EXPECT_EQ(state.growth_tracker, 0);
    const std::vector<float> p_now = problem.p_d.download(), state_now = problem.state_d.download();
    EXPECT_EQ(0, std::memcmp(p_now.data(), p_before.data(), p_now.size() * sizeof(float))) << "parameters written";
    EXPECT_EQ(0, std::memcmp(state_now.data(), state_before.data(), state_now.size() * sizeof(float)))
        << "optimizer state written";
  }
  // Step 4 is the first applied one: the CPU's step 1 on the unscaled gradients.
  problem.gpu_step(scaled(g, problem.loss_scale().scale), 4, config);
  problem.cpu_step(g, 1);
  EXPECT_LT(worst_relative(problem.p_d.download(), problem.p), kRelative);
  EXPECT_LT(worst_relative(problem.state_d.download(), problem.state), kRelative);
  EXPECT_EQ(problem.loss_scale().growth_tracker, 1);
  EXPECT_EQ(problem.loss_scale().skipped_steps, 3);
}

TEST(CudaLossScale, GrowsAfterTheGrowthIntervalOfFiniteSteps) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  LossScaleConfig config;
  config.initial_scale = 1024.0f;
  config.growth_interval = 3;
  Problem problem(1024, default_optimizer(OptimizerKind::kAdamW), config);
  const std::vector<float> g = test::random_normal(1024, 9, 0.5f);
  const float expected[] = {1024, 1024, 2048, 2048, 2048, 4096, 4096};
  for (int step = 1; step <= 7; ++step) {
    problem.gpu_step(scaled(g, problem.loss_scale().scale), step, config);
    EXPECT_EQ(problem.loss_scale().scale, expected[step - 1]) << "after step " << step;
  }
  EXPECT_EQ(problem.loss_scale().growth_tracker, 1);
  EXPECT_EQ(problem.loss_scale().skipped_steps, 0);
}

// ---------------------------------------------------------------- the executor

struct Model {
  Graph graph;
  BuiltWorkload built;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
  Model(const Workload& workload, DType compute) {
    GraphBuilder builder(graph, compute);
    built = workload.build(builder, 4, WorkloadScale::kTiny);
    gradients = append_backward(graph, built.loss);
    plan = plan_memory(graph);
  }
};

void initialise(const Model& model, const Workload& workload, Executor& executor) {
  workload.synthesize(model.graph, 11,
                      [&](TensorId id, const void* data, size_t bytes) { executor.write_tensor(id, data, bytes); });
  uint32_t seed = 1;
  for (TensorId p : model.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = model.graph.tensor(p);
    const bool gain = info.name.find("orm") != std::string::npos && info.name.find("bias") == std::string::npos;
    std::mt19937 random(seed++);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> values(static_cast<size_t>(info.elements()));
    for (float& v : values) v = gain ? 1.0f + normal(random) : normal(random);
    executor.write_tensor(p, values.data(), info.bytes());
  }
}

std::vector<float> read_parameters(const Model& model, Executor& executor) {
  std::vector<float> all;
  for (TensorId p : model.graph.tensors_with_role(TensorRole::kParameter)) {
    std::vector<float> values(static_cast<size_t>(model.graph.tensor(p).elements()));
    executor.read_tensor(p, values.data(), model.graph.tensor(p).bytes());
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

TEST(CudaFp16Engine, LossScalingIsOnForFp16GraphsOnly) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const Workload& workload = find_workload("bert_base");
  Model fp16(workload, DType::kFloat16), bf16(workload, DType::kBFloat16), fp32(workload, DType::kFloat32);
  const auto state = make_cuda_executor(fp16.graph, fp16.plan)->loss_scale_state();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->scale, 65536.0f);
  EXPECT_EQ(state->skipped_steps, 0);
  EXPECT_FALSE(make_cuda_executor(bf16.graph, bf16.plan)->loss_scale_state().has_value());
  EXPECT_FALSE(make_cuda_executor(fp32.graph, fp32.plan)->loss_scale_state().has_value());
  LossScaleConfig on;
  on.mode = LossScaling::kOn;
  on.initial_scale = 8.0f;
  const auto forced = make_cuda_executor(fp32.graph, fp32.plan, false, on)->loss_scale_state();
  ASSERT_TRUE(forced.has_value());
  EXPECT_EQ(forced->scale, 8.0f);
  LossScaleConfig off;
  off.mode = LossScaling::kOff;
  EXPECT_FALSE(make_cuda_executor(fp16.graph, fp16.plan, false, off)->loss_scale_state().has_value());
}

// The data-parallel trainer all-reduces gradients between the backward pass and optimizer_step: an inf that
// arrives there (another rank's overflow) must still skip the step, and the next clean step must apply.
TEST(CudaFp16Engine, AnInfInTheGradientsBeforeTheStepSkipsIt) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const Workload& workload = find_workload("bert_base");
  Model model(workload, DType::kFloat16);
  std::unique_ptr<Executor> gpu = make_cuda_executor(model.graph, model.plan);
  initialise(model, workload, *gpu);
  OptimizerSettings s = default_optimizer(OptimizerKind::kAdamW);
  s.learning_rate = 1e-3f;
  gpu->set_random_stream(5, 0);
  gpu->run();
  const std::vector<float> before = read_parameters(model, *gpu);
  const TensorId gradient = model.gradients.begin()->second;
  std::vector<float> values(static_cast<size_t>(model.graph.tensor(gradient).elements()));
  gpu->read_tensor(gradient, values.data(), model.graph.tensor(gradient).bytes());
  EXPECT_EQ(0u, test::count_non_finite(values)) << "the backward pass itself overflowed";
  values[values.size() / 2] = std::numeric_limits<float>::infinity();
  gpu->write_tensor(gradient, values.data(), model.graph.tensor(gradient).bytes());
  gpu->optimizer_step(s, 1);
  const std::vector<float> after = read_parameters(model, *gpu);
  EXPECT_EQ(0, std::memcmp(before.data(), after.data(), before.size() * sizeof(float))) << "parameters written";
  LossScaleState state = gpu->loss_scale_state().value();
  EXPECT_EQ(state.scale, 32768.0f);
  EXPECT_EQ(state.skipped_steps, 1);

  gpu->set_random_stream(5, 1);
  gpu->run();
  gpu->optimizer_step(s, 2);
  const std::vector<float> stepped = read_parameters(model, *gpu);
  EXPECT_NE(0, std::memcmp(before.data(), stepped.data(), before.size() * sizeof(float))) << "clean step skipped";
  size_t non_finite = 0;
  for (float v : stepped) non_finite += std::isfinite(v) ? 0 : 1;
  EXPECT_EQ(0u, non_finite);
  state = gpu->loss_scale_state().value();
  EXPECT_EQ(state.scale, 32768.0f);
  EXPECT_EQ(state.skipped_steps, 1);
  EXPECT_EQ(state.growth_tracker, 1);
}

// `scalebench run --precision fp16`'s trainer on a tiny workload: every loss finite (it throws otherwise), and
// the loss falls on the fixed synthetic batch (12 AdamW steps at lr 1e-3; tests/e2e/run_tiny.sh asserts the
// same of 8 fp32 steps on the CPU).
TEST(CudaFp16Engine, TinyWorkloadTrainsAndTheLossFalls) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  ReplicaOptions options;
  options.workload = "transformer_big";
  options.scale = WorkloadScale::kTiny;
  options.batch = 4;
  options.precision = Precision::kFp16;
  std::unique_ptr<Replica> replica = build_replica(options, *device, 1, 0, 1001);
  OptimizerSettings adamw = default_optimizer(OptimizerKind::kAdamW);
  adamw.learning_rate = 1e-3f;
  std::vector<float> losses;
  for (int step = 1; step <= 12; ++step) {
    replica->executor->set_random_stream(1, static_cast<uint64_t>(step));
    replica->executor->run();
    replica->executor->optimizer_step(adamw, step);
    float loss = 0;
    replica->executor->read_tensor(replica->built.loss, &loss, sizeof loss);
    losses.push_back(loss);
  }
  EXPECT_TRUE(std::isfinite(losses.back()));
  EXPECT_LT(losses.back(), losses.front());
}

}  // namespace
}  // namespace sb
