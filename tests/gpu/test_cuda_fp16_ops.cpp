// The fp16 instantiations of the CUDA kernels against the CPU fp32 reference on the same fp16-rounded inputs
// (as test_cuda_bf16_ops.cpp does for bf16): casts bit for bit, GEMMs exact on small integers, LayerNorm,
// softmax, GELU and cross-entropy within fp16 tolerances, and the loss-backward kernels' device-side gradient
// scale (fp16 loss scaling). Outputs are poisoned (0xFFFF is a NaN in fp16) and must be written everywhere.
// Skips without a GPU. Run: gpu_tests --gtest_filter='CudaFp16*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/activations.h"
#include "src/cpu/cross_entropy.h"
#include "src/cpu/gemm.h"
#include "src/cpu/layernorm.h"
#include "src/cpu/softmax.h"
#include "src/cpu/span_loss.h"
#include "src/cuda/activations.h"
#include "src/cuda/cast.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/element.h"
#include "src/cuda/gemm.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/softmax.h"
#include "src/cuda/span_loss.h"
#include "tests/support/cuda_array.h"
#include "tests/support/fp16_data.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::Fp16Tensor;
using test::TestStream;
using test::as_fp16;
using test::to_double;
using test::widen_fp16;

// ---------------------------------------------------------------- tolerances
// fp16 keeps 11 significant bits: one rounding is off by at most 2^-11 of the value (normal range), so, with the
// bf16 tests' argument, an fp16 output is within 2 atol + 2^-10 |ref| of the CPU's unrounded fp32 result, where
// atol is the float test's (test_cuda_norm_softmax.cpp, test_cuda_embedding_loss.cpp). Below 2^-14 fp16 is
// subnormal with a spacing of 2^-24 = 6e-8; every atol here is larger, so subnormal outputs are covered.
constexpr double kFp16Rtol = 1.0 / 1024;
constexpr double kFp16NormAtol = 2e-5;    // LayerNorm y, dx (float: 1e-5)
constexpr double kFp16ProbAtol = 2e-6;    // softmax probs, dscores (float: 1e-6)
constexpr double kFp16GeluAtol = 2e-6;    // GELU y, dx of O(1) values (float: 1e-6)
// fp32 outputs computed from the same fp16 values on both sides keep the float tests' tolerances.
constexpr double kParamAtol = 1e-4;  // dgamma/dbeta: fp32 column sums over up to 4096 rows
constexpr double kParamRtol = 1e-4;
// dlogits: twice the float test's absolute part per unit of scale and class.
constexpr double kGradAtolPerScaleClass = 2e-6;
// Half the spacing of fp16 subnormals (2^-25): an unscaled gradient below 2^-14 keeps only this absolute
// precision, which is what loss scaling avoids.
constexpr double kFp16SubnormalHalfSpacing = 2.98023223876953125e-08;

void expect_close(const std::vector<uint16_t>& got, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  const test::CloseComparison c = test::compare_close(widen_fp16(got), to_double(ref), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  const test::CloseComparison c = test::compare_close(got, to_double(ref), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

// ---------------------------------------------------------------- casts

// fp32 -> fp16 -> fp32 against the host's round to nearest even, bit for bit: values across the normal range,
// subnormals, ties, overflow to inf (> 65520) and inf itself; an odd count takes the vector path and a tail,
// an offset view the scalar path.
TEST(CudaFp16Cast, RoundsLikeTheHostBitForBit) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  std::vector<float> x = test::random_normal(4099, 7, 300.0f);
  const float specials[] = {65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f, 5.96e-8f, 1e-6f, 6.1e-5f,
                            1.0f + std::ldexp(1.0f, -11), std::numeric_limits<float>::infinity(), -0.0f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) x[1 + i * 13] = specials[i];  // kept by both views
  const std::vector<uint16_t> want = test::fp16_bits_of(x);
  for (size_t offset : {size_t{0}, size_t{1}}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    const size_t n = x.size() - offset;
    TestStream stream;
    CudaArray<float> d_x(x), d_back(x.size());
    CudaArray<uint16_t> d_h(x.size());
    d_h.poison();
    d_back.poison();
    cuda::cast(d_x.get() + offset, as_fp16(d_h.get()) + offset, static_cast<int64_t>(n), stream.get());
    cuda::cast(as_fp16(d_h.get()) + offset, d_back.get() + offset, static_cast<int64_t>(n), stream.get());
    stream.sync();
    const std::vector<uint16_t> got = d_h.download();
    const std::vector<float> back = d_back.download();
    size_t mismatches = 0, wrong_widen = 0;
    for (size_t i = offset; i < x.size(); ++i) {
      mismatches += got[i] != want[i];
      const float widened = fp16_bits_to_float(want[i]);
      wrong_widen += std::memcmp(&back[i], &widened, sizeof widened) != 0;
    }
    EXPECT_EQ(0u, mismatches) << "fp32 -> fp16";
    EXPECT_EQ(0u, wrong_widen) << "fp16 -> fp32";
    EXPECT_EQ(got[1 + 13 * 2], 0x7C00) << "65520 rounds to inf";
    EXPECT_EQ(got[1], 0x7BFF) << "65504 is the largest finite";
  }
}

// ---------------------------------------------------------------- GEMM

std::vector<float> small_integers(size_t count, uint32_t seed, int bound) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(-bound, bound);
  std::vector<float> out(count);
  for (float& v : out) {
    do v = static_cast<float>(value(random)); while (v == 0.0f);  // never zeros
  }
  return out;
}

struct GemmShape {
  bool ta, tb;
  int64_t m, n, k, batch;
};

// fp16 operands, fp32 compute: small integers (|a|, |b| <= 3, k <= 96) are exact in fp16 and every partial sum
// is an integer of magnitude <= 9 k <= 864, exact in fp32 in any order and in fp16 (integers up to 2048), so
// both results must equal the CPU's exactly. Shapes as test_cuda_gemm_mixed.cpp's, plus a batched one.
class CudaFp16Gemm : public ::testing::TestWithParam<GemmShape> {};

TEST_P(CudaFp16Gemm, ExactWithFp32AndFp16Results) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const GemmShape s = GetParam();
  const int64_t sa = s.m * s.k, sb = s.k * s.n, sc = s.m * s.n;
  const std::vector<float> a = small_integers(static_cast<size_t>(sa * s.batch), 1, 3);
  const std::vector<float> b = small_integers(static_cast<size_t>(sb * s.batch), 2, 3);
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  std::vector<float> exact(static_cast<size_t>(sc * s.batch));
  for (int64_t g = 0; g < s.batch; ++g) {
    cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data() + g * sa, lda, b.data() + g * sb, ldb, 0.0f,
              exact.data() + g * sc, s.n);
  }
  ASSERT_GT(test::l2_norm(exact), 0.0);
  TestStream stream;
  CudaArray<uint16_t> d_a(test::fp16_bits_of(a)), d_b(test::fp16_bits_of(b)), d_c16(exact.size());
  CudaArray<float> d_c32(exact.size());
  d_c16.poison();
  d_c32.poison();
  const cuda::fp16* pa = as_fp16(d_a.get());
  const cuda::fp16* pb = as_fp16(d_b.get());
  cuda::gemm_strided_batched(s.ta, s.tb, s.m, s.n, s.k, 1.0f, pa, lda, pb, ldb, 0.0f, d_c32.get(), s.n, s.batch, sa,
                             sb, sc, stream.get());
  cuda::gemm_strided_batched(s.ta, s.tb, s.m, s.n, s.k, 1.0f, pa, lda, pb, ldb, 0.0f, as_fp16(d_c16.get()), s.n,
                             s.batch, sa, sb, sc, stream.get());
  stream.sync();
  const std::vector<float> c32 = d_c32.download();
  const std::vector<float> c16 = widen_fp16(d_c16.download());
  EXPECT_EQ(0, std::memcmp(c32.data(), exact.data(), exact.size() * sizeof(float))) << "fp32 result";
  EXPECT_EQ(0, std::memcmp(c16.data(), exact.data(), exact.size() * sizeof(float))) << "fp16 result";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaFp16Gemm,
                         ::testing::Values(GemmShape{false, true, 64, 48, 96, 1},
                                           GemmShape{false, false, 33, 24, 40, 1},
                                           GemmShape{true, false, 40, 24, 64, 1}, GemmShape{true, true, 24, 32, 16, 1},
                                           GemmShape{false, true, 16, 16, 32, 4}));

// ---------------------------------------------------------------- LayerNorm

void check_layernorm(int64_t rows, int64_t cols, uint32_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> x_raw = test::random_normal(n, seed, 2.0f);
  for (float& v : x_raw) v += 1.0f;
  const Fp16Tensor x = test::round_to_fp16(x_raw);
  std::vector<float> gamma = test::random_normal(static_cast<size_t>(cols), seed + 1, 0.2f);
  for (float& v : gamma) v += 1.0f;
  const std::vector<float> beta = test::random_normal(static_cast<size_t>(cols), seed + 2, 0.5f);
  const Fp16Tensor dy = test::round_to_fp16(test::random_normal(n, seed + 3));
  const float epsilon = 1e-5f;
  std::vector<float> y_ref(n), mean_ref(static_cast<size_t>(rows)), rstd_ref(static_cast<size_t>(rows));
  cpu::layernorm_forward(x.values.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(), rstd_ref.data(),
                         rows, cols, epsilon);
  std::vector<float> dx_ref(n), dgamma_ref(static_cast<size_t>(cols)), dbeta_ref(static_cast<size_t>(cols));
  cpu::layernorm_backward(dy.values.data(), x.values.data(), gamma.data(), mean_ref.data(), rstd_ref.data(),
                          dx_ref.data(), dgamma_ref.data(), dbeta_ref.data(), rows, cols);

  TestStream stream;
  CudaArray<uint16_t> d_x(x.bits), d_dy(dy.bits), d_y(n), d_dx(n);
  CudaArray<float> d_gamma(gamma), d_beta(beta), d_mean(static_cast<size_t>(rows)), d_rstd(static_cast<size_t>(rows));
  CudaArray<float> d_mean_ref(mean_ref), d_rstd_ref(rstd_ref), d_dgamma(static_cast<size_t>(cols)),
      d_dbeta(static_cast<size_t>(cols));
  d_y.poison();
  d_dx.poison();
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_forward(as_fp16(d_x.get()), d_gamma.get(), d_beta.get(), as_fp16(d_y.get()), d_mean.get(),
                          d_rstd.get(), rows, cols, epsilon, stream.get());
  cuda::layernorm_backward(as_fp16(d_dy.get()), as_fp16(d_x.get()), d_gamma.get(), d_mean_ref.get(), d_rstd_ref.get(),
                           as_fp16(d_dx.get()), d_dgamma.get(), d_dbeta.get(), rows, cols, stream.get());
  stream.sync();
  const std::vector<uint16_t> y = d_y.download(), dx = d_dx.download();
  EXPECT_GT(test::l2_norm(widen_fp16(y)), 0.0);
  EXPECT_GT(test::l2_norm(widen_fp16(dx)), 0.0);
  expect_close(y, y_ref, kFp16NormAtol, kFp16Rtol, "y");
  expect_close(dx, dx_ref, kFp16NormAtol, kFp16Rtol, "dx");
  expect_close(d_dgamma.download(), dgamma_ref, kParamAtol, kParamRtol, "dgamma");
  expect_close(d_dbeta.download(), dbeta_ref, kParamAtol, kParamRtol, "dbeta");
}

TEST(CudaFp16LayerNorm, VectorAndScalarPathsMatchCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(512, 768, 11);  // 8 fp16 per 16-byte access
  check_layernorm(37, 769, 12);   // scalar path
}

// ---------------------------------------------------------------- softmax

TEST(CudaFp16Softmax, CausalWithKeyPaddingMatchesCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t batch = 3, heads = 2, q = 37, k = 37;
  const std::vector<int32_t> lengths = {37, 5, 20};
  const size_t n = static_cast<size_t>(batch * heads * q * k);
  const float scale = 0.125f;
  const Fp16Tensor scores = test::round_to_fp16(test::random_normal(n, 21, 8.0f));
  const Fp16Tensor dprobs = test::round_to_fp16(test::random_normal(n, 22));
  std::vector<float> probs_ref(n), dscores_ref(n);
  cpu::masked_softmax_forward(scores.values.data(), probs_ref.data(), batch, heads, q, k, scale, lengths.data(), true);
  const Fp16Tensor probs_in = test::round_to_fp16(probs_ref);  // the backward differentiates stored fp16 probs
  cpu::masked_softmax_backward(probs_in.values.data(), dprobs.values.data(), dscores_ref.data(), batch, heads, q, k,
                               scale, lengths.data(), true);
  TestStream stream;
  CudaArray<uint16_t> d_scores(scores.bits), d_dprobs(dprobs.bits), d_probs_in(probs_in.bits), d_probs(n), d_dscores(n);
  CudaArray<int32_t> d_lengths(lengths);
  d_probs.poison();
  d_dscores.poison();
  cuda::masked_softmax_forward(as_fp16(d_scores.get()), as_fp16(d_probs.get()), batch, heads, q, k, scale,
                               d_lengths.get(), true, stream.get());
  cuda::masked_softmax_backward(as_fp16(d_probs_in.get()), as_fp16(d_dprobs.get()), as_fp16(d_dscores.get()), batch,
                                heads, q, k, scale, d_lengths.get(), true, stream.get());
  stream.sync();
  const std::vector<uint16_t> probs = d_probs.download(), dscores = d_dscores.download();
  EXPECT_GT(test::l2_norm(widen_fp16(probs)), 0.0);
  EXPECT_GT(test::l2_norm(widen_fp16(dscores)), 0.0);
  expect_close(probs, probs_ref, kFp16ProbAtol, kFp16Rtol, "probs");
  expect_close(dscores, dscores_ref, kFp16ProbAtol, kFp16Rtol, "dscores");
}

// ---------------------------------------------------------------- GELU

TEST(CudaFp16Gelu, ForwardAndBackwardMatchCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (size_t n : {size_t{4096}, size_t{1001}}) {  // 16-byte vectors; a scalar tail
    const Fp16Tensor x = test::round_to_fp16(test::random_normal(n, 31, 2.0f));
    const Fp16Tensor dy = test::round_to_fp16(test::random_normal(n, 32));
    std::vector<float> y_ref(n), dx_ref(n);
    cpu::gelu_forward(x.values.data(), y_ref.data(), static_cast<int64_t>(n));
    cpu::gelu_backward(x.values.data(), dy.values.data(), dx_ref.data(), static_cast<int64_t>(n));
    TestStream stream;
    CudaArray<uint16_t> d_x(x.bits), d_dy(dy.bits), d_y(n), d_dx(n);
    d_y.poison();
    d_dx.poison();
    cuda::gelu_forward(as_fp16(d_x.get()), as_fp16(d_y.get()), static_cast<int64_t>(n), stream.get());
    cuda::gelu_backward(as_fp16(d_x.get()), as_fp16(d_dy.get()), as_fp16(d_dx.get()), static_cast<int64_t>(n),
                        stream.get());
    stream.sync();
    const std::vector<uint16_t> y = d_y.download(), dx = d_dx.download();
    EXPECT_GT(test::l2_norm(widen_fp16(y)), 0.0);
    expect_close(y, y_ref, kFp16GeluAtol, kFp16Rtol, "gelu y, n " + std::to_string(n));
    expect_close(dx, dx_ref, kFp16GeluAtol, kFp16Rtol, "gelu dx, n " + std::to_string(n));
  }
}

// ---------------------------------------------------------------- losses and the loss scale

// The backward of the loss starts fp16 training's backward pass: with the loss scale S in device memory the
// gradient is S times the unscaled one (S a power of two, so exactly S times the kernel's unscaled result), and
// without it (null) the CPU's. The forward losses are never scaled.
TEST(CudaFp16CrossEntropy, BackwardScaledByTheDeviceLossScale) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t rows = 64, classes = 520;
  const size_t n = static_cast<size_t>(rows * classes);
  const Fp16Tensor logits = test::round_to_fp16(test::random_normal(n, 41, 2.0f));
  std::vector<int32_t> targets = test::random_ids(static_cast<size_t>(rows), 42, 0, static_cast<int32_t>(classes - 1));
  targets[3] = -100;  // one ignored row
  std::vector<float> losses_ref(static_cast<size_t>(rows)), lse_ref(static_cast<size_t>(rows)), dlogits_ref(n);
  float loss_sum_ref = 0;
  int64_t counted_ref = 0;
  cpu::softmax_cross_entropy_forward(logits.values.data(), targets.data(), losses_ref.data(), lse_ref.data(),
                                     &loss_sum_ref, &counted_ref, rows, classes, 0.1f, -100);
  ASSERT_EQ(counted_ref, rows - 1);
  const float scale = 1.0f / static_cast<float>(counted_ref);
  cpu::softmax_cross_entropy_backward(logits.values.data(), targets.data(), lse_ref.data(), dlogits_ref.data(), rows,
                                      classes, 0.1f, -100, scale);
  const float loss_scale = 65536.0f;
  TestStream stream;
  CudaArray<uint16_t> d_logits(logits.bits), d_plain(n), d_scaled(n);
  CudaArray<int32_t> d_targets(targets);
  CudaArray<float> d_lse(lse_ref), d_scale(std::vector<float>{loss_scale});
  d_plain.poison();
  d_scaled.poison();
  cuda::softmax_cross_entropy_backward(as_fp16(d_logits.get()), d_targets.get(), d_lse.get(), as_fp16(d_plain.get()),
                                       rows, classes, 0.1f, -100, scale, stream.get());
  cuda::softmax_cross_entropy_backward(as_fp16(d_logits.get()), d_targets.get(), d_lse.get(), as_fp16(d_scaled.get()),
                                       rows, classes, 0.1f, -100, scale, stream.get(), d_scale.get());
  stream.sync();
  const std::vector<float> plain = widen_fp16(d_plain.download()), scaled = widen_fp16(d_scaled.download());
  ASSERT_GT(test::l2_norm(plain), 0.0);
  // Unscaled, many gradients (~1 / (63 * 520)) are fp16 subnormals: the reference within their spacing.
  expect_close(d_plain.download(), dlogits_ref, kGradAtolPerScaleClass * scale / classes + kFp16SubnormalHalfSpacing,
               kFp16Rtol, "dlogits");
  // Scaled by S every gradient is a normal fp16 number: S times the reference within the float tolerance times S,
  // and exactly S times the unscaled value wherever that one was normal (S is a power of two).
  std::vector<float> ref_scaled(n);
  for (size_t i = 0; i < n; ++i) ref_scaled[i] = dlogits_ref[i] * loss_scale;
  expect_close(d_scaled.download(), ref_scaled, kGradAtolPerScaleClass * scale * loss_scale / classes, kFp16Rtol,
               "S * dlogits");
  size_t not_s_times = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(plain[i]) >= std::ldexp(1.0f, -14)) not_s_times += scaled[i] != plain[i] * loss_scale;
  }
  EXPECT_EQ(0u, not_s_times) << "normal fp16 gradients must be exactly S times the unscaled ones";
}

TEST(CudaFp16SpanLoss, BackwardScaledByTheDeviceLossScale) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t batch = 8, seq = 384;
  const size_t n = static_cast<size_t>(batch * seq);
  const Fp16Tensor start = test::round_to_fp16(test::random_normal(n, 51, 2.0f));
  const Fp16Tensor end = test::round_to_fp16(test::random_normal(n, 52, 2.0f));
  const std::vector<int32_t> start_pos = test::random_ids(static_cast<size_t>(batch), 53, 0, seq - 1);
  const std::vector<int32_t> end_pos = test::random_ids(static_cast<size_t>(batch), 54, 0, seq - 1);
  std::vector<float> row_losses(2 * batch), lse(2 * batch), dstart_ref(n), dend_ref(n);
  ASSERT_GT(test::l2_norm(start.values), 0.0);
  float loss = 0;
  cpu::span_loss_forward(start.values.data(), end.values.data(), start_pos.data(), end_pos.data(), row_losses.data(),
                         lse.data(), &loss, batch, seq);
  cpu::span_loss_backward(start.values.data(), end.values.data(), start_pos.data(), end_pos.data(), lse.data(),
                          dstart_ref.data(), dend_ref.data(), batch, seq, 1.0f);
  const float loss_scale = 1024.0f;
  for (float& v : dstart_ref) v *= loss_scale;
  for (float& v : dend_ref) v *= loss_scale;
  TestStream stream;
  CudaArray<uint16_t> d_start(start.bits), d_end(end.bits), d_dstart(n), d_dend(n);
  CudaArray<int32_t> d_sp(start_pos), d_ep(end_pos);
  CudaArray<float> d_lse(lse), d_scale(std::vector<float>{loss_scale});
  d_dstart.poison();
  d_dend.poison();
  cuda::span_loss_backward(as_fp16(d_start.get()), as_fp16(d_end.get()), d_sp.get(), d_ep.get(), d_lse.get(),
                           as_fp16(d_dstart.get()), as_fp16(d_dend.get()), batch, seq, 1.0f, stream.get(),
                           d_scale.get());
  stream.sync();
  const std::vector<uint16_t> dstart = d_dstart.download(), dend = d_dend.download();
  EXPECT_GT(test::l2_norm(widen_fp16(dstart)), 0.0);
  // The per-row scale is loss_scale / (2 batch) = 64: twice the float test's 1e-6 per unit of scale.
  const double atol = 2e-6 * loss_scale / (2.0 * batch);
  expect_close(dstart, dstart_ref, atol, kFp16Rtol, "S * dstart");
  expect_close(dend, dend_ref, atol, kFp16Rtol, "S * dend");
}

}  // namespace
}  // namespace sb
