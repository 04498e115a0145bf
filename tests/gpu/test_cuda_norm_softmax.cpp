// sb::cuda::layernorm_* and sb::cuda::masked_softmax_* against the CPU reference (src/cpu/layernorm.h,
// src/cpu/softmax.h) on fresh random inputs: odd sizes (37 x 769, scalar path), BERT-like 4096 x 768 (float4
// path), causal attention with key padding and a zero-length sequence. Outputs are NaN-poisoned first and must
// be written everywhere; masked probabilities and gradients must be exactly 0. Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaLayerNorm*:CudaSoftmax*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/layernorm.h"
#include "src/cpu/softmax.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/softmax.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;
using test::to_double;

// Tolerances (|got - ref| <= atol + rtol |ref|; the CPU reference keeps fp64 statistics, the GPU fp32):
// LayerNorm y: O(1) values from a few fp32 operations after fp32 row statistics (error ~ 1e-7 relative);
// 1e-5 leaves two orders of magnitude.
constexpr double kNormAtol = 1e-5;
constexpr double kNormRtol = 1e-5;
// mean: a 769- or 768-term fp32 sum divided by cols; values ~1, errors ~1e-7.
constexpr double kMeanAtol = 1e-6;
constexpr double kMeanRtol = 1e-5;
// rstd: the fp32 two-pass variance over ~10^3 terms is good to ~1e-6 relative.
constexpr double kRstdRtol = 1e-5;
// dx: rstd * (g - mean(g) - xhat * mean(g xhat)); O(1) terms, the row means are fp32 sums over cols.
// The absolute part covers the cancellation inside the parenthesis.
constexpr double kDxAtol = 1e-5;
constexpr double kDxRtol = 1e-5;
// dgamma/dbeta: fp32 column sums over up to 4096 rows (chunks of 32 rows, then the chunks in order); the
// sums are ~sqrt(rows) ~ 64 with cancellation, and fp32 order error grows with the number of terms: 1e-4.
constexpr double kParamAtol = 1e-4;
constexpr double kParamRtol = 1e-4;
// Softmax probabilities: fp32 exp of arguments of magnitude <= ~10 (rounding ~1e-6 relative in p) and an
// fp32 sum over <= 769 keys.
constexpr double kProbAtol = 1e-6;
constexpr double kProbRtol = 1e-5;
// dscores = scale * p * (dp - dot): the fp32 dot over <= 769 keys is good to ~1e-6 absolute, times scale * p
// <= 0.125, so 1e-6 absolute covers the cancellation in (dp - dot).
constexpr double kDscoreAtol = 1e-6;
constexpr double kDscoreRtol = 1e-5;

// ------------------------------------------------------------------------------------------- LayerNorm

void check_layernorm(int64_t rows, int64_t cols, float epsilon, uint32_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  // Rows with mean ~1 and std ~2 (residual sums), gamma/beta away from the identity.
  std::vector<float> x = test::random_normal(n, seed, 2.0f);
  for (float& v : x) v += 1.0f;
  std::vector<float> gamma = test::random_normal(static_cast<size_t>(cols), seed + 1, 0.2f);
  for (float& v : gamma) v += 1.0f;
  const std::vector<float> beta = test::random_normal(static_cast<size_t>(cols), seed + 2, 0.5f);
  const std::vector<float> dy = test::random_normal(n, seed + 3);
  ASSERT_GT(test::l2_norm(x), 0.0);
  ASSERT_GT(test::l2_norm(dy), 0.0);

  // CPU reference; its saved statistics feed both backward passes, so they see identical inputs.
  std::vector<float> y_ref(n), mean_ref(static_cast<size_t>(rows)), rstd_ref(static_cast<size_t>(rows));
  cpu::layernorm_forward(x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(), rstd_ref.data(), rows,
                         cols, epsilon);
  std::vector<float> dx_ref(n), dgamma_ref(static_cast<size_t>(cols)), dbeta_ref(static_cast<size_t>(cols));
  cpu::layernorm_backward(dy.data(), x.data(), gamma.data(), mean_ref.data(), rstd_ref.data(), dx_ref.data(),
                          dgamma_ref.data(), dbeta_ref.data(), rows, cols);

  TestStream stream;
  CudaArray<float> d_x(x), d_gamma(gamma), d_beta(beta), d_dy(dy);
  CudaArray<float> d_y(n), d_mean(static_cast<size_t>(rows)), d_rstd(static_cast<size_t>(rows));
  d_y.poison();
  d_mean.poison();
  d_rstd.poison();
  cuda::layernorm_forward(d_x.get(), d_gamma.get(), d_beta.get(), d_y.get(), d_mean.get(), d_rstd.get(), rows, cols,
                          epsilon, stream.get());
  stream.sync();
  const std::vector<float> y = d_y.download(), mean = d_mean.download(), rstd = d_rstd.download();
  EXPECT_EQ(0u, test::count_unwritten(y));
  EXPECT_EQ(0u, test::count_unwritten(mean));
  EXPECT_EQ(0u, test::count_unwritten(rstd));
  EXPECT_GT(test::l2_norm(y), 0.0);
  auto c = test::compare_close(y, to_double(y_ref), kNormAtol, kNormRtol);
  EXPECT_TRUE(c.ok()) << "y: " << c.description;
  c = test::compare_close(mean, to_double(mean_ref), kMeanAtol, kMeanRtol);
  EXPECT_TRUE(c.ok()) << "mean: " << c.description;
  c = test::compare_close(rstd, to_double(rstd_ref), 0.0, kRstdRtol);
  EXPECT_TRUE(c.ok()) << "rstd: " << c.description;

  CudaArray<float> d_mean_ref(mean_ref), d_rstd_ref(rstd_ref);
  CudaArray<float> d_dx(n), d_dgamma(static_cast<size_t>(cols)), d_dbeta(static_cast<size_t>(cols));
  d_dx.poison();
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_backward(d_dy.get(), d_x.get(), d_gamma.get(), d_mean_ref.get(), d_rstd_ref.get(), d_dx.get(),
                           d_dgamma.get(), d_dbeta.get(), rows, cols, stream.get());
  stream.sync();
  const std::vector<float> dx = d_dx.download(), dgamma = d_dgamma.download(), dbeta = d_dbeta.download();
  EXPECT_EQ(0u, test::count_unwritten(dx));
  EXPECT_EQ(0u, test::count_unwritten(dgamma));
  EXPECT_EQ(0u, test::count_unwritten(dbeta));
  EXPECT_GT(test::l2_norm(dx), 0.0);
  EXPECT_GT(test::l2_norm(dgamma), 0.0);
  EXPECT_GT(test::l2_norm(dbeta), 0.0);
  c = test::compare_close(dx, to_double(dx_ref), kDxAtol, kDxRtol);
  EXPECT_TRUE(c.ok()) << "dx: " << c.description;
  c = test::compare_close(dgamma, to_double(dgamma_ref), kParamAtol, kParamRtol);
  EXPECT_TRUE(c.ok()) << "dgamma: " << c.description;
  c = test::compare_close(dbeta, to_double(dbeta_ref), kParamAtol, kParamRtol);
  EXPECT_TRUE(c.ok()) << "dbeta: " << c.description;

  // The column sums have no atomics: a second run gives the same bits.
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_backward(d_dy.get(), d_x.get(), d_gamma.get(), d_mean_ref.get(), d_rstd_ref.get(), d_dx.get(),
                           d_dgamma.get(), d_dbeta.get(), rows, cols, stream.get());
  stream.sync();
  const std::vector<float> dgamma2 = d_dgamma.download(), dbeta2 = d_dbeta.download();
  EXPECT_EQ(0, std::memcmp(dgamma.data(), dgamma2.data(), sizeof(float) * dgamma.size())) << "dgamma not reproducible";
  EXPECT_EQ(0, std::memcmp(dbeta.data(), dbeta2.data(), sizeof(float) * dbeta.size())) << "dbeta not reproducible";
}

TEST(CudaLayerNorm, OddSizesMatchCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(37, 769, cpu::kFairseqLayerNormEpsilon, 101);  // scalar path, 2 row chunks
}

TEST(CudaLayerNorm, BertLikeMatchesCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(4096, 768, cpu::kBertLayerNormEpsilon, 202);  // float4 path, 128 row chunks
}

TEST(CudaLayerNorm, WideSingleRowMatchesCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(1, 4100, cpu::kFairseqLayerNormEpsilon, 303);  // 1025 float4s over 256 threads
}

TEST(CudaLayerNorm, ZeroRowsWriteZeroParameterGradients) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  TestStream stream;
  CudaArray<float> d_gamma(test::random_normal(5, 7)), d_dgamma(5), d_dbeta(5);
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_backward<float>(nullptr, nullptr, d_gamma.get(), nullptr, nullptr, nullptr, d_dgamma.get(),
                                  d_dbeta.get(), 0, 5, stream.get());
  stream.sync();
  EXPECT_EQ(std::vector<float>(5, 0.0f), d_dgamma.download());
  EXPECT_EQ(std::vector<float>(5, 0.0f), d_dbeta.download());
}

// --------------------------------------------------------------------------------------------- Softmax

struct SoftmaxCase {
  int64_t batch, heads, q_len, k_len;
  std::vector<int32_t> key_lengths;  // empty: no padding (nullptr)
  bool causal;
};

// Valid keys of a row, as the CPU reference defines them.
int64_t valid_keys(const SoftmaxCase& s, int64_t b, int64_t q) {
  int64_t valid = s.key_lengths.empty() ? s.k_len : s.key_lengths[static_cast<size_t>(b)];
  if (s.causal && q + 1 < valid) valid = q + 1;
  return valid;
}

void check_softmax(const SoftmaxCase& s, uint32_t seed) {
  const size_t n = static_cast<size_t>(s.batch * s.heads * s.q_len * s.k_len);
  const float scale = 0.125f;  // 1 / sqrt(64), BERT's head size
  const std::vector<float> scores = test::random_normal(n, seed, 8.0f);  // scaled logits ~ N(0, 1)
  const std::vector<float> dprobs = test::random_normal(n, seed + 1);    // non-zero on masked keys too
  const int32_t* lengths = s.key_lengths.empty() ? nullptr : s.key_lengths.data();

  std::vector<float> probs_ref(n), dscores_ref(n);
  cpu::masked_softmax_forward(scores.data(), probs_ref.data(), s.batch, s.heads, s.q_len, s.k_len, scale, lengths,
                              s.causal);
  cpu::masked_softmax_backward(probs_ref.data(), dprobs.data(), dscores_ref.data(), s.batch, s.heads, s.q_len,
                               s.k_len, scale, lengths, s.causal);

  TestStream stream;
  CudaArray<float> d_scores(scores), d_dprobs(dprobs), d_probs_ref(probs_ref), d_probs(n), d_dscores(n);
  CudaArray<int32_t> d_lengths(s.key_lengths);
  const int32_t* d_lengths_ptr = s.key_lengths.empty() ? nullptr : d_lengths.get();
  d_probs.poison();
  d_dscores.poison();
  cuda::masked_softmax_forward(d_scores.get(), d_probs.get(), s.batch, s.heads, s.q_len, s.k_len, scale,
                               d_lengths_ptr, s.causal, stream.get());
  // The backward pass gets the CPU probabilities, so both sides differentiate the same input.
  cuda::masked_softmax_backward(d_probs_ref.get(), d_dprobs.get(), d_dscores.get(), s.batch, s.heads, s.q_len,
                                s.k_len, scale, d_lengths_ptr, s.causal, stream.get());
  stream.sync();
  const std::vector<float> probs = d_probs.download(), dscores = d_dscores.download();

  EXPECT_EQ(0u, test::count_unwritten(probs));
  EXPECT_EQ(0u, test::count_unwritten(dscores));
  EXPECT_GT(test::l2_norm(probs), 0.0);
  EXPECT_GT(test::l2_norm(dscores), 0.0);
  auto c = test::compare_close(probs, to_double(probs_ref), kProbAtol, kProbRtol);
  EXPECT_TRUE(c.ok()) << "probs: " << c.description;
  c = test::compare_close(dscores, to_double(dscores_ref), kDscoreAtol, kDscoreRtol);
  EXPECT_TRUE(c.ok()) << "dscores: " << c.description;

  // Masked keys exactly 0 (bit pattern +0 or -0 both compare equal to 0.0f), valid rows summing to 1.
  size_t masked_nonzero = 0, masked_total = 0, bad_row_sums = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t q = 0; q < s.q_len; ++q) {
        const size_t row = static_cast<size_t>(((b * s.heads + h) * s.q_len + q) * s.k_len);
        const int64_t valid = valid_keys(s, b, q);
        double sum = 0;
        for (int64_t k = 0; k < s.k_len; ++k) {
          const size_t i = row + static_cast<size_t>(k);
          if (k < valid) {
            sum += probs[i];
          } else {
            ++masked_total;
            masked_nonzero += (probs[i] != 0.0f) + (dscores[i] != 0.0f);
          }
        }
        const double want = valid > 0 ? 1.0 : 0.0;
        bad_row_sums += std::fabs(sum - want) > 1e-5 ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(0u, masked_nonzero) << "of " << masked_total << " masked positions (probs and dscores)";
  EXPECT_EQ(0u, bad_row_sums) << "rows whose probabilities do not sum to 1 (0 when fully masked)";
}

TEST(CudaSoftmax, CausalWithKeyPaddingAndEmptySequence) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({3, 2, 37, 37, {37, 0, 20}, true}, 401);
}

TEST(CudaSoftmax, BertLikeKeyPadding) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({4, 12, 128, 128, {128, 77, 1, 100}, false}, 402);
}

TEST(CudaSoftmax, OddKeyLengthNoMask) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({2, 3, 5, 769, {}, false}, 403);
}

TEST(CudaSoftmax, CausalShorterQueriesThanKeys) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({2, 2, 7, 69, {69, 3}, true}, 404);
}

}  // namespace
}  // namespace sb
