// The fused optimizers and the gradient norm on the GPU against the CPU reference (fp32 on the GPU vs double
// on the CPU) over several steps, every optimizer, with and without clipping, on the vector (16-byte aligned)
// and scalar paths. Skips when no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/optimizer.h"
#include "src/cuda/optimizer.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

// fp32 per-element arithmetic against double, five steps of O(1e-3) updates: ~1e-6 relative (AdamW measured
// at the previous kernel's 1e-5 bound); 1e-3 keeps values near zero from dominating.
constexpr double kRelative = 1e-5, kFloor = 1e-3;
// The state sums O(0.5) gradients (SGD's momentum buffer up to ~2): fp32 rounds each sum at ~1e-7 absolute, so
// entries that cancel to near zero are judged against the buffers' scale, not their own (measured on H200:
// 1.5e-4 relative with the parameters' 1e-3 floor, i.e. 1.5e-7 absolute).
constexpr double kStateFloor = 1e-1;

constexpr OptimizerKind kAllKinds[] = {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kAdamax,
                                       OptimizerKind::kSgdMomentum, OptimizerKind::kNag};

double worst_relative(const std::vector<float>& got, const float* want, int64_t n, double floor = kFloor) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / (std::fabs(want[i]) + floor));
  }
  return worst;
}

// Five steps of `s` over n parameters on both devices; `offset` floats into each device buffer (1: the scalar
// path; 0: float4, plus a scalar tail when n is not a multiple of 4).
void compare_with_cpu(const OptimizerSettings& s, int64_t n, int64_t offset) {
  SCOPED_TRACE(describe_optimizer(s) + ", n " + std::to_string(n) + (offset ? " (unaligned)" : " (aligned)"));
  const int buffers = optimizer_state_buffers(s.kind);
  const int64_t state_n = buffers * cpu::optimizer_state_stride(n);  // padding stays 0 on both devices
  std::vector<float> p = test::random_normal(n, 1), state(static_cast<size_t>(state_n), 0.0f);
  std::vector<double> scratch(cpu::kGradNormScratchDoubles);
  float *p_d, *g_d, *state_d;
  double* scratch_d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_d), (n + offset) * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&g_d), (n + offset) * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&state_d), (state_n + offset) * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&scratch_d), cpu::kGradNormScratchDoubles * 8), cudaSuccess);
  cudaMemcpy(p_d + offset, p.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemset(state_d, 0, (state_n + offset) * 4);
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> g = test::random_normal(n, 100 + step, 0.5f);
    cudaMemcpy(g_d + offset, g.data(), n * 4, cudaMemcpyHostToDevice);
    cpu::grad_norm_squared(g.data(), n, scratch.data());
    cpu::optimizer_step(p.data(), g.data(), state.data(), n, s, step, scratch.data());
    cuda::grad_norm_squared(g_d + offset, n, scratch_d, nullptr);
    cuda::optimizer_step(p_d + offset, g_d + offset, state_d + offset, n, s, cuda::eager_value(step), scratch_d,
                         nullptr);
  }
  std::vector<float> p_gpu(n), state_gpu(static_cast<size_t>(state_n));
  ASSERT_EQ(cudaMemcpy(p_gpu.data(), p_d + offset, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(state_gpu.data(), state_d + offset, state_n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_LT(worst_relative(p_gpu, p.data(), n), kRelative);
  EXPECT_LT(worst_relative(state_gpu, state.data(), state_n, kStateFloor), kRelative);
  for (void* ptr : {static_cast<void*>(p_d), static_cast<void*>(g_d), static_cast<void*>(state_d),
                    static_cast<void*>(scratch_d)}) {
    cudaFree(ptr);
  }
}

TEST(CudaOptimizer, EveryOptimizerMatchesTheCpuOverFiveSteps) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (OptimizerKind kind : kAllKinds) {
    OptimizerSettings s = default_optimizer(kind);
    s.learning_rate = 1e-3f;
    s.weight_decay = 0.01f;
    compare_with_cpu(s, 1000003, 0);
    compare_with_cpu(s, 1000004, 0);
    compare_with_cpu(s, 1000003, 1);
  }
}

TEST(CudaOptimizer, EveryOptimizerMatchesTheCpuWhenClipping) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // N(0, 0.5^2) gradients over 1e6 elements have norm ~500: 100 clips (~0.2), 1e4 does not.
  for (float max_norm : {100.0f, 1e4f}) {
    for (OptimizerKind kind : kAllKinds) {
      OptimizerSettings s = default_optimizer(kind);
      s.learning_rate = 1e-3f;
      s.max_grad_norm = max_norm;
      compare_with_cpu(s, 1000003, max_norm == 100.0f ? 0 : 1);
    }
  }
}

TEST(CudaOptimizer, GradNormIsDeterministicAndMatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (int64_t n : {int64_t{5}, int64_t{1000003}, int64_t{40000000}}) {
    const std::vector<float> g = test::random_normal(n, 11);
    float* g_d;
    double* scratch_d;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&g_d), n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&scratch_d), cpu::kGradNormScratchDoubles * 8), cudaSuccess);
    cudaMemcpy(g_d, g.data(), n * 4, cudaMemcpyHostToDevice);
    double first = -1, second = -2, want = 0;
    cuda::grad_norm_squared(g_d, n, scratch_d, nullptr);
    cudaMemcpy(&first, scratch_d, 8, cudaMemcpyDeviceToHost);
    cudaMemset(scratch_d, 0xff, cpu::kGradNormScratchDoubles * 8);  // poisoned: the second run must rewrite it
    cuda::grad_norm_squared(g_d, n, scratch_d, nullptr);
    cudaMemcpy(&second, scratch_d, 8, cudaMemcpyDeviceToHost);
    std::vector<double> cpu_scratch(cpu::kGradNormScratchDoubles);
    cpu::grad_norm_squared(g.data(), n, cpu_scratch.data());
    want = cpu_scratch[0];
    ASSERT_GT(want, 0);
    EXPECT_EQ(first, second) << "n " << n << ": not bit-identical between runs";
    EXPECT_NEAR(first, want, 1e-10 * want) << "n " << n;  // double sums of positive terms in two orders
    cudaFree(g_d);
    cudaFree(scratch_d);
  }
}

}  // namespace
}  // namespace sb
