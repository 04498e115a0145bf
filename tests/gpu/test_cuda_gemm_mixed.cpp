// Mixed-precision GEMMs and the fused bias epilogue (src/cuda/gemm.h) against the CPU GEMM: bf16 operands
// with a bf16 or fp32 result, every transpose setting, with and without a bias, plus fp32 with a bias.
// Small-integer data (|entries| <= 3, k <= 96, bias <= 8) is exact in bf16, every product and partial sum is
// an integer below 2^24, so fp32 accumulation is exact in any order: the fp32 results must be equal, and a
// bf16 result must equal the exact value rounded once to bf16. Outputs are poisoned first.
// Skips when no GPU is visible. Run: build/tests/gpu_tests --gtest_filter='CudaGemmMixed*'
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/half_precision.h"
#include "src/cpu/bias.h"
#include "src/cpu/gemm.h"
#include "src/cuda/element.h"
#include "src/cuda/gemm.h"
#include "tests/support/cuda_array.h"

namespace sb {
namespace {

using cuda::bf16;

std::vector<float> small_integers(size_t count, uint32_t seed, int bound) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(-bound, bound);
  std::vector<float> out(count);
  for (float& v : out) {
    do v = static_cast<float>(value(random)); while (v == 0.0f);  // never zeros
  }
  return out;
}

std::vector<bf16> to_bf16(const std::vector<float>& values) {
  std::vector<bf16> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = float_to_bf16_bits(values[i]);
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
}

float from_bf16(bf16 value) {
  uint16_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bf16_bits_to_float(bits);
}

struct Shape {
  bool ta, tb, bias;
  int64_t m, n, k;
};

class CudaGemmMixed : public ::testing::TestWithParam<Shape> {};

// The exact product (+ bias), from the CPU GEMM on the same small integers.
std::vector<float> reference(const Shape& s, const std::vector<float>& a, const std::vector<float>& b,
                             const std::vector<float>& bias) {
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), s.ta ? s.m : s.k, b.data(), s.tb ? s.k : s.n, 0.0f, c.data(),
            s.n);
  if (s.bias) cpu::bias_add_forward(c.data(), bias.data(), s.m, s.n);
  return c;
}

TEST_P(CudaGemmMixed, Bf16OperandsExactWithFp32AndBf16Results) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Shape s = GetParam();
  const std::vector<float> a = small_integers(s.m * s.k, 1, 3), b = small_integers(s.k * s.n, 2, 3);
  const std::vector<float> bias = small_integers(s.n, 3, 8);
  const std::vector<float> exact = reference(s, a, b, bias);
  test::TestStream stream;
  test::CudaArray<bf16> a_dev(to_bf16(a)), b_dev(to_bf16(b));
  test::CudaArray<float> bias32(bias);    // a bias has the result's type
  test::CudaArray<bf16> bias16(to_bf16(bias));
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;

  test::CudaArray<float> c32(exact.size());
  c32.poison();
  cuda::gemm_strided_batched(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a_dev.get(), lda, b_dev.get(), ldb, 0.0f, c32.get(),
                             s.n, 1, 0, 0, 0, stream.get(), s.bias ? bias32.get() : nullptr);
  stream.sync();
  const std::vector<float> got32 = c32.download();
  for (size_t i = 0; i < exact.size(); ++i) ASSERT_EQ(got32[i], exact[i]) << "fp32 result, element " << i;

  test::CudaArray<bf16> c16(exact.size());
  c16.poison();
  cuda::gemm_strided_batched(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a_dev.get(), lda, b_dev.get(), ldb, 0.0f, c16.get(),
                             s.n, 1, 0, 0, 0, stream.get(), s.bias ? bias16.get() : nullptr);
  stream.sync();
  const std::vector<bf16> got16 = c16.download();
  for (size_t i = 0; i < exact.size(); ++i) {
    ASSERT_EQ(from_bf16(got16[i]), bf16_bits_to_float(float_to_bf16_bits(exact[i]))) << "bf16 result, element " << i;
  }
}

TEST_P(CudaGemmMixed, Fp32WithTheBiasEpilogueIsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Shape s = GetParam();
  if (!s.bias) GTEST_SKIP() << "bias cases only";
  const std::vector<float> a = small_integers(s.m * s.k, 4, 3), b = small_integers(s.k * s.n, 5, 3);
  const std::vector<float> bias = small_integers(s.n, 6, 8);
  const std::vector<float> exact = reference(s, a, b, bias);
  test::TestStream stream;
  test::CudaArray<float> a_dev(a), b_dev(b), bias_dev(bias), c(exact.size());
  c.poison();
  cuda::gemm_strided_batched(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a_dev.get(), s.ta ? s.m : s.k, b_dev.get(),
                             s.tb ? s.k : s.n, 0.0f, c.get(), s.n, 1, 0, 0, 0, stream.get(), bias_dev.get());
  stream.sync();
  const std::vector<float> got = c.download();
  for (size_t i = 0; i < exact.size(); ++i) ASSERT_EQ(got[i], exact[i]) << "element " << i;
}

// Linear-layer shapes (NT), their backward GEMMs (NN, TN, TT); m odd, leading dimensions multiples of 8 (bf16
// tensor-core kernels want 16-byte aligned rows).
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmMixed,
                         ::testing::Values(Shape{false, true, true, 64, 48, 96}, Shape{false, true, false, 64, 48, 96},
                                           Shape{false, false, false, 33, 24, 40}, Shape{true, false, false, 40, 24, 64},
                                           Shape{true, true, false, 24, 32, 16}, Shape{false, true, true, 7, 40, 24}),
                         [](const auto& info) {
                           const Shape& s = info.param;
                           return std::string(s.ta ? "T" : "N") + (s.tb ? "T" : "N") + "_" + std::to_string(s.m) + "x" +
                                  std::to_string(s.n) + "x" + std::to_string(s.k) + (s.bias ? "_bias" : "");
                         });

}  // namespace
}  // namespace sb
