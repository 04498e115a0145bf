// The bf16 instantiations of the row-wise CUDA kernels (src/cuda/{layernorm,softmax,embedding,cross_entropy}.h)
// against the CPU reference (src/cpu, same names) run in fp32 on the same bf16-rounded inputs: activations
// (x, dy, scores, logits, ...) are bf16, parameters and statistics (gamma, beta, tables, mean, rstd, losses)
// fp32. bf16 outputs are within one bf16 ulp of the CPU's fp32 result (gathers: the rounded value exactly);
// fp32 outputs keep the float tests' tolerances, since both sides reduce the same values. Shapes take the
// 16-byte vector path (8 bf16) and the scalar one; outputs are poisoned first and must be written everywhere.
// The elementwise kernels' bf16 tests are in test_cuda_bf16_elementwise.cpp. Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaBf16*' (both files).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/cross_entropy.h"
#include "src/cpu/embedding.h"
#include "src/cpu/layernorm.h"
#include "src/cpu/softmax.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/element.h"
#include "src/cuda/embedding.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/softmax.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::Bf16Tensor;
using test::CudaArray;
using test::TestStream;
using test::to_double;

// ---------------------------------------------------------------- tolerances
// bf16 outputs: bf16 keeps 8 significant bits, so one rounding is off by at most 2^-8 of the value; an fp32
// result e away from the CPU's can round to the neighbouring bf16 value, so the stored value is within
// e (1 + 2^-8) + 2^-8 |ref| of the CPU's unrounded fp32 result. With the float tests' bound
// e <= atol + rtol |ref| (rtol <= 1e-5), |got - ref| <= 2 atol + 2^-7 |ref|: kBf16Rtol and twice each float
// atol (tests/gpu/test_cuda_norm_softmax.cpp, test_cuda_embedding_loss.cpp).
constexpr double kBf16Rtol = 1.0 / 128;
constexpr double kBf16NormAtol = 2e-5;     // LayerNorm y (float: 1e-5)
constexpr double kBf16DxAtol = 2e-5;       // LayerNorm dx (float: 1e-5)
constexpr double kBf16ProbAtol = 2e-6;     // softmax probs (float: 1e-6)
constexpr double kBf16DscoreAtol = 2e-6;   // softmax dscores (float: 1e-6)
// A row of bf16 probabilities sums to 1 within the sum of its elements' roundings, <= 2^-8; kBf16Rtol leaves 2x.
constexpr double kBf16RowSum = 1.0 / 128;
// fp32 outputs computed from the same bf16 values on both sides: the float tests' tolerances and reasons.
constexpr double kMeanAtol = 1e-6;   // fp32 row sums of ~10^3 O(1) terms
constexpr double kMeanRtol = 1e-5;
constexpr double kRstdRtol = 1e-5;   // two-pass fp32 variance
constexpr double kParamAtol = 1e-4;  // dgamma/dbeta: fp32 column sums over up to 4096 rows
constexpr double kParamRtol = 1e-4;
constexpr double kScatterAtol = 1e-4;  // embedding backward: fp32 atomicAdd order, ~80 hits per row
constexpr double kScatterRtol = 1e-4;
constexpr double kLossAtol = 1e-5;  // losses and logsumexp: fp32 online sums feed an fp64 formula
constexpr double kLossRtol = 1e-5;
constexpr double kLossSumRtol = 1e-5;
// dlogits (bf16 output): twice the float test's absolute part, scale * 1e-6 / classes for normal logits and
// scale * 1e-6 for +-80 logits (where p ~ q ~ 1 can cancel on the target).
constexpr double kGradAtolPerScaleClass = 2e-6;
constexpr double kGradAtolPerScaleLargeLogits = 2e-6;

// ---------------------------------------------------------------- checks

void expect_bits(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const std::string& what) {
  const test::BitComparison c = test::compare_bits(got, want);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

// Every element written (the poison is a NaN) and |got - ref| <= atol + rtol |ref| against the fp32 CPU result.
void expect_close(const std::vector<uint16_t>& got, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  const test::CloseComparison c = test::compare_close(test::widen(got), to_double(ref), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  const test::CloseComparison c = test::compare_close(got, to_double(ref), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

// ---------------------------------------------------------------- LayerNorm

void check_layernorm(int64_t rows, int64_t cols, float epsilon, uint32_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> x_raw = test::random_normal(n, seed, 2.0f);  // rows with mean ~1 and std ~2
  for (float& v : x_raw) v += 1.0f;
  const Bf16Tensor x = test::round_to_bf16(x_raw);
  std::vector<float> gamma = test::random_normal(static_cast<size_t>(cols), seed + 1, 0.2f);
  for (float& v : gamma) v += 1.0f;
  const std::vector<float> beta = test::random_normal(static_cast<size_t>(cols), seed + 2, 0.5f);
  const Bf16Tensor dy = test::round_to_bf16(test::random_normal(n, seed + 3));
  ASSERT_GT(test::l2_norm(x.values), 0.0);
  ASSERT_GT(test::l2_norm(dy.values), 0.0);

  // CPU reference; its saved statistics feed both backward passes, so they see identical inputs.
  std::vector<float> y_ref(n), mean_ref(static_cast<size_t>(rows)), rstd_ref(static_cast<size_t>(rows));
  cpu::layernorm_forward(x.values.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(), rstd_ref.data(),
                         rows, cols, epsilon);
  std::vector<float> dx_ref(n), dgamma_ref(static_cast<size_t>(cols)), dbeta_ref(static_cast<size_t>(cols));
  cpu::layernorm_backward(dy.values.data(), x.values.data(), gamma.data(), mean_ref.data(), rstd_ref.data(),
                          dx_ref.data(), dgamma_ref.data(), dbeta_ref.data(), rows, cols);

  TestStream stream;
  CudaArray<uint16_t> d_x(x.bits), d_dy(dy.bits), d_y(n), d_dx(n);
  CudaArray<float> d_gamma(gamma), d_beta(beta), d_mean(static_cast<size_t>(rows)), d_rstd(static_cast<size_t>(rows));
  d_y.poison();
  d_mean.poison();
  d_rstd.poison();
  cuda::layernorm_forward(test::as_bf16(d_x.get()), d_gamma.get(), d_beta.get(), test::as_bf16(d_y.get()),
                          d_mean.get(), d_rstd.get(), rows, cols, epsilon, stream.get());
  stream.sync();
  const std::vector<uint16_t> y = d_y.download();
  const std::vector<float> mean = d_mean.download(), rstd = d_rstd.download();
  EXPECT_EQ(0u, test::count_unwritten(mean));
  EXPECT_EQ(0u, test::count_unwritten(rstd));
  EXPECT_GT(test::l2_norm(test::widen(y)), 0.0);
  expect_close(y, y_ref, kBf16NormAtol, kBf16Rtol, "y");
  expect_close(mean, mean_ref, kMeanAtol, kMeanRtol, "mean");
  expect_close(rstd, rstd_ref, 0.0, kRstdRtol, "rstd");

  CudaArray<float> d_mean_ref(mean_ref), d_rstd_ref(rstd_ref);
  CudaArray<float> d_dgamma(static_cast<size_t>(cols)), d_dbeta(static_cast<size_t>(cols));
  d_dx.poison();
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_backward(test::as_bf16(d_dy.get()), test::as_bf16(d_x.get()), d_gamma.get(), d_mean_ref.get(),
                           d_rstd_ref.get(), test::as_bf16(d_dx.get()), d_dgamma.get(), d_dbeta.get(), rows, cols,
                           stream.get());
  stream.sync();
  const std::vector<uint16_t> dx = d_dx.download();
  const std::vector<float> dgamma = d_dgamma.download(), dbeta = d_dbeta.download();
  EXPECT_EQ(0u, test::count_unwritten(dgamma));
  EXPECT_EQ(0u, test::count_unwritten(dbeta));
  EXPECT_GT(test::l2_norm(test::widen(dx)), 0.0);
  EXPECT_GT(test::l2_norm(dgamma), 0.0);
  EXPECT_GT(test::l2_norm(dbeta), 0.0);
  expect_close(dx, dx_ref, kBf16DxAtol, kBf16Rtol, "dx");
  expect_close(dgamma, dgamma_ref, kParamAtol, kParamRtol, "dgamma");
  expect_close(dbeta, dbeta_ref, kParamAtol, kParamRtol, "dbeta");

  // The column sums have no atomics: a second run gives the same bits.
  d_dgamma.poison();
  d_dbeta.poison();
  cuda::layernorm_backward(test::as_bf16(d_dy.get()), test::as_bf16(d_x.get()), d_gamma.get(), d_mean_ref.get(),
                           d_rstd_ref.get(), test::as_bf16(d_dx.get()), d_dgamma.get(), d_dbeta.get(), rows, cols,
                           stream.get());
  stream.sync();
  const std::vector<float> dgamma2 = d_dgamma.download(), dbeta2 = d_dbeta.download();
  EXPECT_EQ(0, std::memcmp(dgamma.data(), dgamma2.data(), sizeof(float) * dgamma.size())) << "dgamma not reproducible";
  EXPECT_EQ(0, std::memcmp(dbeta.data(), dbeta2.data(), sizeof(float) * dbeta.size())) << "dbeta not reproducible";
}

TEST(CudaBf16LayerNorm, OddSizesMatchCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(37, 769, cpu::kFairseqLayerNormEpsilon, 101);  // scalar path, 2 row chunks
}

TEST(CudaBf16LayerNorm, BertLikeMatchesCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(4096, 768, cpu::kBertLayerNormEpsilon, 202);  // vector path (96 x 8 bf16), 128 row chunks
}

TEST(CudaBf16LayerNorm, WideSingleRowMatchesCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(1, 4104, cpu::kFairseqLayerNormEpsilon, 303);  // 513 vectors over 256 threads
}

TEST(CudaBf16LayerNorm, ColsMultipleOf4ButNot8MatchCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_layernorm(5, 772, cpu::kFairseqLayerNormEpsilon, 404);  // float would vectorise; bf16 goes scalar
}

// ---------------------------------------------------------------- Softmax

struct SoftmaxCase {
  int64_t batch, heads, q_len, k_len;
  std::vector<int32_t> key_lengths;  // empty: no padding (nullptr)
  bool causal;
};

int64_t valid_keys(const SoftmaxCase& s, int64_t b, int64_t q) {
  int64_t valid = s.key_lengths.empty() ? s.k_len : s.key_lengths[static_cast<size_t>(b)];
  if (s.causal && q + 1 < valid) valid = q + 1;
  return valid;
}

void check_softmax(const SoftmaxCase& s, uint32_t seed) {
  const size_t n = static_cast<size_t>(s.batch * s.heads * s.q_len * s.k_len);
  const float scale = 0.125f;  // 1 / sqrt(64), BERT's head size
  const Bf16Tensor scores = test::round_to_bf16(test::random_normal(n, seed, 8.0f));  // scaled logits ~ N(0, 1)
  const Bf16Tensor dprobs = test::round_to_bf16(test::random_normal(n, seed + 1));    // non-zero on masked keys too
  const int32_t* lengths = s.key_lengths.empty() ? nullptr : s.key_lengths.data();

  std::vector<float> probs_ref(n), dscores_ref(n);
  cpu::masked_softmax_forward(scores.values.data(), probs_ref.data(), s.batch, s.heads, s.q_len, s.k_len, scale,
                              lengths, s.causal);
  // The backward pass differentiates the stored (bf16) probabilities on both sides.
  const Bf16Tensor probs_in = test::round_to_bf16(probs_ref);
  cpu::masked_softmax_backward(probs_in.values.data(), dprobs.values.data(), dscores_ref.data(), s.batch, s.heads,
                               s.q_len, s.k_len, scale, lengths, s.causal);

  TestStream stream;
  CudaArray<uint16_t> d_scores(scores.bits), d_dprobs(dprobs.bits), d_probs_in(probs_in.bits), d_probs(n),
      d_dscores(n);
  CudaArray<int32_t> d_lengths(s.key_lengths);
  const int32_t* d_lengths_ptr = s.key_lengths.empty() ? nullptr : d_lengths.get();
  d_probs.poison();
  d_dscores.poison();
  cuda::masked_softmax_forward(test::as_bf16(d_scores.get()), test::as_bf16(d_probs.get()), s.batch, s.heads, s.q_len,
                               s.k_len, scale, d_lengths_ptr, s.causal, stream.get());
  cuda::masked_softmax_backward(test::as_bf16(d_probs_in.get()), test::as_bf16(d_dprobs.get()),
                                test::as_bf16(d_dscores.get()), s.batch, s.heads, s.q_len, s.k_len, scale,
                                d_lengths_ptr, s.causal, stream.get());
  stream.sync();
  const std::vector<uint16_t> probs_bits = d_probs.download(), dscores_bits = d_dscores.download();
  const std::vector<float> probs = test::widen(probs_bits), dscores = test::widen(dscores_bits);
  EXPECT_GT(test::l2_norm(probs), 0.0);
  EXPECT_GT(test::l2_norm(dscores), 0.0);
  expect_close(probs_bits, probs_ref, kBf16ProbAtol, kBf16Rtol, "probs");
  expect_close(dscores_bits, dscores_ref, kBf16DscoreAtol, kBf16Rtol, "dscores");

  // Masked keys exactly 0, valid rows summing to 1 within the roundings.
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
        bad_row_sums += std::fabs(sum - want) > kBf16RowSum ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(0u, masked_nonzero) << "of " << masked_total << " masked positions (probs and dscores)";
  EXPECT_EQ(0u, bad_row_sums) << "rows whose probabilities do not sum to 1 (0 when fully masked)";
}

TEST(CudaBf16Softmax, CausalWithKeyPaddingAndEmptySequence) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({3, 2, 37, 37, {37, 0, 20}, true}, 401);
}

TEST(CudaBf16Softmax, BertLikeKeyPadding) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({4, 12, 128, 128, {128, 77, 1, 100}, false}, 402);
}

TEST(CudaBf16Softmax, OddKeyLengthNoMask) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_softmax({2, 3, 5, 769, {}, false}, 403);
}

// ---------------------------------------------------------------- Embedding

void check_embedding_forward(int64_t tokens, int64_t dim, int64_t vocab, uint32_t seed) {
  const std::vector<int32_t> ids = test::random_ids(tokens, seed, 0, static_cast<int32_t>(vocab - 1));
  const std::vector<float> table = test::random_normal(static_cast<size_t>(vocab * dim), seed + 1);  // fp32
  const size_t n = static_cast<size_t>(tokens * dim);
  std::vector<float> ref(n);
  cpu::embedding_forward(ids.data(), table.data(), ref.data(), tokens, dim, vocab);
  TestStream stream;
  CudaArray<int32_t> d_ids(ids);
  CudaArray<float> d_table(table);
  CudaArray<uint16_t> d_out(n);
  d_out.poison();
  cuda::embedding_forward(d_ids.get(), d_table.get(), test::as_bf16(d_out.get()), tokens, dim, vocab, stream.get());
  stream.sync();
  EXPECT_GT(test::l2_norm(ref), 0.0);
  expect_bits(d_out.download(), test::bf16_bits_of(ref), "embedding_forward");  // the table rows, rounded once
}

TEST(CudaBf16Embedding, ForwardOddDimIsTheRoundedRow) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_forward(129, 37, 1000, 31);  // scalar path
  check_embedding_forward(64, 12, 10, 33);     // dim % 8 == 4: scalar for bf16
}

TEST(CudaBf16Embedding, ForwardBertSizedIsTheRoundedRow) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_forward(4096, 768, 30522, 32);  // vector path: 8 floats in, 8 bf16 out
}

void check_embedding_backward(int64_t tokens, int64_t dim, int64_t vocab, int64_t padding_idx, uint32_t seed) {
  std::vector<int32_t> ids = test::random_ids(tokens, seed, 0, static_cast<int32_t>(vocab - 1));
  if (padding_idx != cpu::kNoPaddingIdx) {
    for (size_t t = 0; t < ids.size(); t += 7) ids[t] = static_cast<int32_t>(padding_idx);  // padded tokens
  }
  const Bf16Tensor dout = test::round_to_bf16(test::random_normal(static_cast<size_t>(tokens * dim), seed + 1));
  const std::vector<float> dtable_start = test::random_normal(static_cast<size_t>(vocab * dim), seed + 2);
  std::vector<float> ref = dtable_start;  // accumulated into, as a tied table's second use would be
  cpu::embedding_backward_accumulate(ids.data(), dout.values.data(), ref.data(), tokens, dim, vocab, padding_idx);

  TestStream stream;
  CudaArray<int32_t> d_ids(ids);
  CudaArray<uint16_t> d_dout(dout.bits);
  CudaArray<float> d_dtable(dtable_start);
  cuda::embedding_backward_accumulate(d_ids.get(), test::as_bf16(d_dout.get()), d_dtable.get(), tokens, dim, vocab,
                                      padding_idx, stream.get());
  stream.sync();
  const std::vector<float> dtable = d_dtable.download();
  expect_close(dtable, ref, kScatterAtol, kScatterRtol, "dtable");
  // Every non-padding row that was hit changed; the padding row did not.
  std::vector<bool> hit(static_cast<size_t>(vocab), false);
  for (int32_t id : ids) hit[static_cast<size_t>(id)] = true;
  size_t unchanged_hit_rows = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    const size_t row = static_cast<size_t>(v * dim);
    const bool same = std::memcmp(dtable.data() + row, dtable_start.data() + row, sizeof(float) * dim) == 0;
    if (v == padding_idx) {
      EXPECT_TRUE(same) << "padding row " << v << " received gradient";
    } else if (hit[static_cast<size_t>(v)] && same) {
      ++unchanged_hit_rows;
    }
  }
  EXPECT_EQ(0u, unchanged_hit_rows);
}

TEST(CudaBf16Embedding, BackwardRepeatedIdsAndPaddingIdx) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(4096, 768, 50, 1, 41);  // ~80 hits per id; fairseq's padding id 1; vector path
}

TEST(CudaBf16Embedding, BackwardOddDimNoPadding) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(513, 37, 7, cpu::kNoPaddingIdx, 42);  // scalar path
}

// ---------------------------------------------------------------- Cross-entropy

struct LossCase {
  int64_t rows, classes;
  float label_smoothing;
  int32_t ignore_index;
  int ignore_every;   // every n-th row's target is ignore_index; 0 for none
  bool large_logits;  // uniform in [-80, 80] instead of N(0, 2)
};

void check_cross_entropy(const LossCase& s, uint32_t seed) {
  const size_t n = static_cast<size_t>(s.rows * s.classes);
  const Bf16Tensor logits = test::round_to_bf16(s.large_logits ? test::random_uniform(n, seed, -80.0f, 80.0f)
                                                               : test::random_normal(n, seed, 2.0f));
  std::vector<int32_t> targets = test::random_ids(s.rows, seed + 1, 0, static_cast<int32_t>(s.classes - 1));
  if (s.ignore_every > 0) {
    for (size_t r = 0; r < targets.size(); r += static_cast<size_t>(s.ignore_every)) targets[r] = s.ignore_index;
  }
  const size_t rows = static_cast<size_t>(s.rows);
  std::vector<float> losses_ref(rows), lse_ref(rows), dlogits_ref(n);
  float loss_sum_ref = 0;
  int64_t counted_ref = 0;
  cpu::softmax_cross_entropy_forward(logits.values.data(), targets.data(), losses_ref.data(), lse_ref.data(),
                                     &loss_sum_ref, &counted_ref, s.rows, s.classes, s.label_smoothing,
                                     s.ignore_index);
  ASSERT_GT(counted_ref, 0);
  const float scale = 1.0f / static_cast<float>(counted_ref);  // a mean over counted rows
  cpu::softmax_cross_entropy_backward(logits.values.data(), targets.data(), lse_ref.data(), dlogits_ref.data(),
                                      s.rows, s.classes, s.label_smoothing, s.ignore_index, scale);

  TestStream stream;
  CudaArray<uint16_t> d_logits(logits.bits), d_dlogits(n);
  CudaArray<float> d_losses(rows), d_lse(rows), d_loss_sum(1), d_lse_ref(lse_ref);
  CudaArray<int32_t> d_targets(targets);
  CudaArray<int64_t> d_counted(1);
  d_losses.poison();
  d_lse.poison();
  d_loss_sum.poison();
  d_counted.poison();
  d_dlogits.poison();
  cuda::softmax_cross_entropy_forward(test::as_bf16(d_logits.get()), d_targets.get(), d_losses.get(), d_lse.get(),
                                      d_loss_sum.get(), d_counted.get(), s.rows, s.classes, s.label_smoothing,
                                      s.ignore_index, stream.get());
  // The backward pass gets the CPU's saved logsumexp, so both sides start from the same values.
  cuda::softmax_cross_entropy_backward(test::as_bf16(d_logits.get()), d_targets.get(), d_lse_ref.get(),
                                       test::as_bf16(d_dlogits.get()), s.rows, s.classes, s.label_smoothing,
                                       s.ignore_index, scale, stream.get());
  stream.sync();
  const std::vector<float> losses = d_losses.download(), lse = d_lse.download();
  const std::vector<uint16_t> dlogits_bits = d_dlogits.download();
  const std::vector<float> dlogits = test::widen(dlogits_bits);
  const float loss_sum = d_loss_sum.download()[0];
  const int64_t counted = d_counted.download()[0];

  EXPECT_EQ(0u, test::count_unwritten(losses));
  EXPECT_EQ(0u, test::count_unwritten(lse));
  EXPECT_GT(test::l2_norm(losses), 0.0);
  EXPECT_GT(test::l2_norm(dlogits), 0.0);
  expect_close(losses, losses_ref, kLossAtol, kLossRtol, "losses");
  expect_close(lse, lse_ref, kLossAtol, kLossRtol, "saved_logsumexp");
  EXPECT_EQ(counted_ref, counted);
  EXPECT_NEAR(loss_sum_ref, loss_sum, kLossSumRtol * std::fabs(loss_sum_ref)) << "loss_sum";
  const double grad_atol = scale * (s.large_logits ? kGradAtolPerScaleLargeLogits
                                                   : kGradAtolPerScaleClass / static_cast<double>(s.classes));
  expect_close(dlogits_bits, dlogits_ref, grad_atol, kBf16Rtol, "dlogits");

  // Ignored rows: loss and gradient exactly 0.
  size_t nonzero_ignored = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (targets[r] != s.ignore_index) continue;
    nonzero_ignored += losses[r] != 0.0f;
    for (size_t k = 0; k < static_cast<size_t>(s.classes); ++k) nonzero_ignored += dlogits[r * s.classes + k] != 0.0f;
  }
  EXPECT_EQ(0u, nonzero_ignored);
}

TEST(CudaBf16CrossEntropy, Vocab32kLabelSmoothingIgnoredRows) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({96, 32768, 0.1f, 1, 4, false}, 61);  // vector path; eps 0.1, padding id 1 ignored
}

TEST(CudaBf16CrossEntropy, OddClassesNoSmoothing) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({37, 769, 0.0f, cpu::kNoIgnoreIndex, 0, false}, 62);  // scalar path
}

TEST(CudaBf16CrossEntropy, LargeLogitsWithSmoothing) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({37, 1000, 0.1f, -100, 5, true}, 63);  // 1000 = 125 vectors of 8
}

TEST(CudaBf16CrossEntropy, ClassesMultipleOf4ButNot8) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({8, 1004, 0.1f, -100, 3, false}, 64);  // float would vectorise; bf16 goes scalar
}

}  // namespace
}  // namespace sb
