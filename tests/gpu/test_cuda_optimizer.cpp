// The fused AdamW kernel against the CPU reference over several steps (fp32 on the GPU vs double on the
// CPU: 1e-5 relative after five steps). Skips when no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>

#include "scalebench/device.h"
#include "src/cpu/optimizer.h"
#include "src/cuda/optimizer.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

TEST(CudaOptimizer, AdamWMatchesTheCpuOverFiveSteps) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t n = 1000003;
  std::vector<float> p = test::random_normal(n, 1), m(n, 0.0f), v(n, 0.0f);
  std::vector<float> p_gpu_host(n);
  float *p_d, *g_d, *m_d, *v_d;
  for (float** ptr : {&p_d, &g_d, &m_d, &v_d}) ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(ptr), n * sizeof(float)), cudaSuccess);
  cudaMemcpy(p_d, p.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemset(m_d, 0, n * 4);
  cudaMemset(v_d, 0, n * 4);
  AdamWSettings settings;
  settings.learning_rate = 1e-3f;
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> g = test::random_normal(n, 100 + step, 0.5f);
    cudaMemcpy(g_d, g.data(), n * 4, cudaMemcpyHostToDevice);
    cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), n, settings, step);
    cuda::adamw_step(p_d, g_d, m_d, v_d, n, settings, step, nullptr);
  }
  ASSERT_EQ(cudaMemcpy(p_gpu_host.data(), p_d, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(p_gpu_host[i]) - p[i]) / (std::fabs(p[i]) + 1e-3));
  EXPECT_LT(worst, 1e-5);
  for (float* ptr : {p_d, g_d, m_d, v_d}) cudaFree(ptr);
}

}  // namespace
}  // namespace sb
