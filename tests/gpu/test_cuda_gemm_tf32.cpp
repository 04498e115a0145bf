// TF32 GEMMs: within TF32's accuracy of the CPU's fp32 product, and measurably less exact than the fp32
// path (proof the tensor-core mode was really taken). Skips when no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>

#include "scalebench/device.h"
#include "src/cpu/gemm.h"
#include "src/cuda/gemm.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

double relative_error(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST(CudaGemmTf32, WithinTf32AccuracyAndDifferentFromFp32) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t m = 256, n = 192, k = 512;
  const std::vector<float> a = test::random_normal(m * k, 1), b = test::random_normal(k * n, 2);
  std::vector<float> ref(m * n), got(m * n);
  cpu::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, ref.data(), n);
  float *a_d, *b_d, *c_d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&a_d), a.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&b_d), b.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c_d), got.size() * 4), cudaSuccess);
  cudaMemcpy(a_d, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(b_d, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  double errors[2];
  for (int tf32 = 0; tf32 < 2; ++tf32) {
    cuda::set_gemm_math(tf32 ? cuda::GemmMath::kTf32 : cuda::GemmMath::kFp32);
    cuda::gemm(false, false, m, n, k, 1.0f, a_d, k, b_d, n, 0.0f, c_d, n, nullptr);
    ASSERT_EQ(cudaMemcpy(got.data(), c_d, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    errors[tf32] = relative_error(got, ref);
  }
  cuda::set_gemm_math(cuda::GemmMath::kFp32);
  EXPECT_LT(errors[0], 1e-5) << "fp32";
  // TF32 keeps 10 mantissa bits: ~2^-11 relative per product, averaging down over k terms.
  EXPECT_LT(errors[1], 3e-3) << "tf32";
  EXPECT_GT(errors[1], 10 * errors[0]) << "tf32 " << errors[1] << " vs fp32 " << errors[0];
  cudaFree(a_d);
  cudaFree(b_d);
  cudaFree(c_d);
}

}  // namespace
}  // namespace sb
