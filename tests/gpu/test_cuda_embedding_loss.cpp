// sb::cuda::embedding_*, sb::cuda::softmax_cross_entropy_* and the layout kernels (add_broadcast_forward,
// swap_middle) against the CPU reference on fresh random inputs: BERT-sized gathers, scatter-adds with heavily
// repeated ids and a padding_idx, out-of-range ids and targets (never a write outside the buffers), a 32,768-
// class label-smoothed loss with ignored rows, 65,521 classes, +-80 logits. Outputs are NaN-poisoned first.
// Skips without a GPU. Run: gpu_tests --gtest_filter='CudaEmbedding*:CudaCrossEntropy*:CudaLayout*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/cross_entropy.h"
#include "src/cpu/embedding.h"
#include "src/cpu/layout.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/embedding.h"
#include "src/cuda/layout.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;
using test::to_double;

// Tolerances (|got - ref| <= atol + rtol |ref|):
// Gathers, copies and the single fp32 add of the broadcast are exact: the GPU must match bit for bit.
// Embedding backward: fp32 atomicAdd in arbitrary order; a row hit ~80 times sums ~80 N(0,1) values onto an
// N(0,1) start (|sum| ~ 9), order error ~sqrt(80) ulps of 9 ~ 1e-5; 1e-4 (the CPU sums in fp64, rounds once).
constexpr double kScatterAtol = 1e-4;
constexpr double kScatterRtol = 1e-4;
// Cross-entropy loss and logsumexp: fp32 online sums of up to 65k exps (~1e-6 relative) feed an fp64 formula;
// losses are ~10, so 1e-5 relative (plus 1e-5 absolute for small losses) is two orders of margin.
constexpr double kLossAtol = 1e-5;
constexpr double kLossRtol = 1e-5;
// loss_sum: fp64 sum of the fp32 per-row losses vs the CPU's fp64 sum of fp64 losses.
constexpr double kLossSumRtol = 1e-5;
// dlogits = scale * (p - q): p = expf(z - lse) is good to ~1e-6 relative (argument rounding ~|z - lse| * 6e-8,
// expf 2 ulp). Where p ~ q the difference cancels; q is eps/(V-1) there, so an absolute
// 1e-6 * scale / classes covers it. With +-80 logits the target can hold p ~ 1 = q: 1e-6 * scale there.
constexpr double kGradRtol = 1e-5;
constexpr double kGradAtolPerScaleClass = 1e-6;
constexpr double kGradAtolPerScaleLargeLogits = 1e-6;

// ---------------------------------------------------------------------------------------------- Layout

TEST(CudaLayout, AddBroadcastIsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Shape {
    int64_t repeats, block;
  };
  for (const Shape s : {Shape{37, 769}, Shape{8, 512 * 768}}) {  // scalar path; float4 path (positions)
    const size_t n = static_cast<size_t>(s.repeats * s.block);
    const std::vector<float> x = test::random_normal(n, 11), table = test::random_normal(s.block, 12);
    std::vector<float> ref(n);
    cpu::add_broadcast_forward(x.data(), table.data(), ref.data(), s.repeats, s.block);
    TestStream stream;
    CudaArray<float> d_x(x), d_table(table), d_y(n);
    d_y.poison();
    cuda::add_broadcast_forward(d_x.get(), d_table.get(), d_y.get(), s.repeats, s.block, stream.get());
    // In place (y == x), as the executor may run it.
    cuda::add_broadcast_forward(d_x.get(), d_table.get(), d_x.get(), s.repeats, s.block, stream.get());
    stream.sync();
    const std::vector<float> y = d_y.download(), y_in_place = d_x.download();
    EXPECT_EQ(0u, test::count_unwritten(y));
    EXPECT_GT(test::l2_norm(y), 0.0);
    EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), sizeof(float) * n)) << s.repeats << " x " << s.block;
    EXPECT_EQ(0, std::memcmp(ref.data(), y_in_place.data(), sizeof(float) * n)) << "in place";
  }
}

TEST(CudaLayout, SwapMiddleIsExactAndItsOwnInverse) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Shape {
    int64_t a, b, c, d;
  };
  // Odd d (scalar path), BERT heads (8, 128, 12, 64) (float4 path), d = 4 (one float4 per run).
  for (const Shape s : {Shape{2, 37, 5, 13}, Shape{8, 128, 12, 64}, Shape{3, 7, 9, 4}}) {
    const size_t n = static_cast<size_t>(s.a * s.b * s.c * s.d);
    const std::vector<float> x = test::random_normal(n, 21);
    std::vector<float> ref(n);
    cpu::swap_middle(x.data(), ref.data(), s.a, s.b, s.c, s.d);
    TestStream stream;
    CudaArray<float> d_x(x), d_y(n), d_back(n);
    d_y.poison();
    d_back.poison();
    cuda::swap_middle(d_x.get(), d_y.get(), s.a, s.b, s.c, s.d, stream.get());
    cuda::swap_middle(d_y.get(), d_back.get(), s.a, s.c, s.b, s.d, stream.get());
    stream.sync();
    const std::vector<float> y = d_y.download(), back = d_back.download();
    EXPECT_EQ(0u, test::count_unwritten(y));
    EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), sizeof(float) * n)) << s.a << "," << s.b << "," << s.c << "," << s.d;
    EXPECT_EQ(0, std::memcmp(x.data(), back.data(), sizeof(float) * n)) << "round trip";
  }
}

// ------------------------------------------------------------------------------------------- Embedding

void check_embedding_forward(int64_t tokens, int64_t dim, int64_t vocab, uint32_t seed) {
  const std::vector<int32_t> ids = test::random_ids(tokens, seed, 0, static_cast<int32_t>(vocab - 1));
  const std::vector<float> table = test::random_normal(static_cast<size_t>(vocab * dim), seed + 1);
  const size_t n = static_cast<size_t>(tokens * dim);
  std::vector<float> ref(n);
  cpu::embedding_forward(ids.data(), table.data(), ref.data(), tokens, dim, vocab);
  TestStream stream;
  CudaArray<int32_t> d_ids(ids);
  CudaArray<float> d_table(table), d_out(n);
  d_out.poison();
  cuda::embedding_forward(d_ids.get(), d_table.get(), d_out.get(), tokens, dim, vocab, stream.get());
  stream.sync();
  const std::vector<float> out = d_out.download();
  EXPECT_EQ(0u, test::count_unwritten(out));
  EXPECT_GT(test::l2_norm(out), 0.0);
  EXPECT_EQ(0, std::memcmp(ref.data(), out.data(), sizeof(float) * n)) << tokens << " x " << dim;
}

TEST(CudaEmbedding, ForwardOddDimIsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_forward(129, 37, 1000, 31);  // scalar path
}

TEST(CudaEmbedding, ForwardBertSizedIsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_forward(4096, 768, 30522, 32);  // float4 path
}

void check_embedding_backward(int64_t tokens, int64_t dim, int64_t vocab, int64_t padding_idx, uint32_t seed) {
  std::vector<int32_t> ids = test::random_ids(tokens, seed, 0, static_cast<int32_t>(vocab - 1));
  if (padding_idx != cpu::kNoPaddingIdx) {
    for (size_t t = 0; t < ids.size(); t += 7) ids[t] = static_cast<int32_t>(padding_idx);  // padded tokens
  }
  const std::vector<float> dout = test::random_normal(static_cast<size_t>(tokens * dim), seed + 1);
  const std::vector<float> dtable_start = test::random_normal(static_cast<size_t>(vocab * dim), seed + 2);
  std::vector<float> ref = dtable_start;  // accumulated into, as a tied table's second use would be
  cpu::embedding_backward_accumulate(ids.data(), dout.data(), ref.data(), tokens, dim, vocab, padding_idx);

  TestStream stream;
  CudaArray<int32_t> d_ids(ids);
  CudaArray<float> d_dout(dout), d_dtable(dtable_start);
  cuda::embedding_backward_accumulate(d_ids.get(), d_dout.get(), d_dtable.get(), tokens, dim, vocab, padding_idx,
                                      stream.get());
  stream.sync();
  const std::vector<float> dtable = d_dtable.download();
  EXPECT_EQ(0u, test::count_unwritten(dtable));
  const auto c = test::compare_close(dtable, to_double(ref), kScatterAtol, kScatterRtol);
  EXPECT_TRUE(c.ok()) << c.description;
  // Every non-padding row that was hit changed.
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

TEST(CudaEmbedding, BackwardRepeatedIdsAndPaddingIdx) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(4096, 768, 50, 1, 41);  // ~80 hits per id; fairseq's padding id 1; float4 path
}

TEST(CudaEmbedding, BackwardOddDimNoPadding) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(513, 37, 7, cpu::kNoPaddingIdx, 42);  // scalar path
}

// BERT's token types: 2 rows, 16,384 tokens (~8,192 hits each, |sum| ~ 90, so the relative 1e-4 allows ~9e-3:
// fp32 partial sums of 32 tokens and 512 block adds are ~1e-5 off): the shared-memory path; with a padding row too.
TEST(CudaEmbedding, BackwardFewRowsHitManyTimes) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(16384, 768, 2, cpu::kNoPaddingIdx, 44);
  check_embedding_backward(1000, 768, 3, 0, 45);
  check_embedding_backward(333, 37, 11, 2, 46);  // a token stretch that ends inside a block; odd width
}

TEST(CudaEmbedding, BackwardBertVocabulary) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_embedding_backward(4096, 768, 30522, 0, 43);  // BERT's [PAD] = 0
}

// Out-of-range ids never touch memory outside the table: guard rows on both sides stay as they were, the
// forward rows of bad ids are NaN, and the backward pass skips them.
TEST(CudaEmbedding, OutOfRangeIdsStayInsideTheTable) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t tokens = 64, dim = 12, vocab = 10;
  std::vector<int32_t> ids = test::random_ids(tokens, 51, 0, static_cast<int32_t>(vocab - 1));
  ids[3] = -1;
  ids[17] = static_cast<int32_t>(vocab);
  ids[40] = 1 << 30;
  std::vector<int32_t> good_ids = ids;  // the reference without the bad tokens
  const std::vector<float> table = test::random_normal(static_cast<size_t>((vocab + 2) * dim), 52);  // guards
  const std::vector<float> dout = test::random_normal(static_cast<size_t>(tokens * dim), 53);
  std::vector<float> good_dout = dout;
  std::vector<float> ref_dtable = table;
  {
    std::vector<int32_t> kept_ids;
    std::vector<float> kept_dout;
    for (int64_t t = 0; t < tokens; ++t) {
      if (ids[t] < 0 || ids[t] >= vocab) continue;
      kept_ids.push_back(ids[t]);
      kept_dout.insert(kept_dout.end(), dout.begin() + t * dim, dout.begin() + (t + 1) * dim);
    }
    cpu::embedding_backward_accumulate(kept_ids.data(), kept_dout.data(), ref_dtable.data() + dim,
                                       static_cast<int64_t>(kept_ids.size()), dim, vocab, cpu::kNoPaddingIdx);
  }

  TestStream stream;
  CudaArray<int32_t> d_ids(ids);
  CudaArray<float> d_table(table), d_out(static_cast<size_t>(tokens * dim)), d_dout(dout);
  d_out.poison();
  cuda::embedding_forward(d_ids.get(), d_table.get() + dim, d_out.get(), tokens, dim, vocab, stream.get());
  stream.sync();
  const std::vector<float> out = d_out.download();
  for (int64_t t = 0; t < tokens; ++t) {
    const bool bad = ids[t] < 0 || ids[t] >= vocab;
    for (int64_t c = 0; c < dim; ++c) {
      const float got = out[static_cast<size_t>(t * dim + c)];
      if (bad) {
        EXPECT_TRUE(std::isnan(got)) << "token " << t << " id " << ids[t];
      } else {
        EXPECT_EQ(table[static_cast<size_t>((ids[t] + 1) * dim + c)], got) << "token " << t;
      }
    }
  }

  cuda::embedding_backward_accumulate(d_ids.get(), d_dout.get(), d_table.get() + dim, tokens, dim, vocab,
                                      cpu::kNoPaddingIdx, stream.get());
  stream.sync();
  const std::vector<float> dtable = d_table.download();
  EXPECT_EQ(0, std::memcmp(table.data(), dtable.data(), sizeof(float) * dim)) << "guard row below the table";
  EXPECT_EQ(0, std::memcmp(table.data() + (vocab + 1) * dim, dtable.data() + (vocab + 1) * dim, sizeof(float) * dim))
      << "guard row above the table";
  const auto c = test::compare_close(dtable, to_double(ref_dtable), kScatterAtol, kScatterRtol);
  EXPECT_TRUE(c.ok()) << c.description;
}

// --------------------------------------------------------------------------------------- Cross-entropy

struct LossCase {
  int64_t rows, classes;
  float label_smoothing;
  int32_t ignore_index;
  int ignore_every;    // every n-th row's target is ignore_index; 0 for none
  bool large_logits;   // uniform in [-80, 80] instead of N(0, 2)
};

void check_cross_entropy(const LossCase& s, uint32_t seed) {
  const size_t n = static_cast<size_t>(s.rows * s.classes);
  const std::vector<float> logits = s.large_logits ? test::random_uniform(n, seed, -80.0f, 80.0f)
                                                   : test::random_normal(n, seed, 2.0f);
  std::vector<int32_t> targets = test::random_ids(s.rows, seed + 1, 0, static_cast<int32_t>(s.classes - 1));
  if (s.ignore_every > 0) {
    for (size_t r = 0; r < targets.size(); r += static_cast<size_t>(s.ignore_every)) targets[r] = s.ignore_index;
  }
  const size_t rows = static_cast<size_t>(s.rows);
  std::vector<float> losses_ref(rows), lse_ref(rows), dlogits_ref(n);
  float loss_sum_ref = 0;
  int64_t counted_ref = 0;
  cpu::softmax_cross_entropy_forward(logits.data(), targets.data(), losses_ref.data(), lse_ref.data(), &loss_sum_ref,
                                     &counted_ref, s.rows, s.classes, s.label_smoothing, s.ignore_index);
  ASSERT_GT(counted_ref, 0);
  const float scale = 1.0f / static_cast<float>(counted_ref);  // a mean over counted rows
  cpu::softmax_cross_entropy_backward(logits.data(), targets.data(), lse_ref.data(), dlogits_ref.data(), s.rows,
                                      s.classes, s.label_smoothing, s.ignore_index, scale);

  TestStream stream;
  CudaArray<float> d_logits(logits), d_losses(rows), d_lse(rows), d_loss_sum(1), d_lse_ref(lse_ref), d_dlogits(n);
  CudaArray<int32_t> d_targets(targets);
  CudaArray<int64_t> d_counted(1);
  d_losses.poison();
  d_lse.poison();
  d_loss_sum.poison();
  d_counted.poison();
  d_dlogits.poison();
  cuda::softmax_cross_entropy_forward(d_logits.get(), d_targets.get(), d_losses.get(), d_lse.get(), d_loss_sum.get(),
                                      d_counted.get(), s.rows, s.classes, s.label_smoothing, s.ignore_index,
                                      stream.get());
  // The backward pass gets the CPU's saved logsumexp, so both sides start from the same values.
  cuda::softmax_cross_entropy_backward(d_logits.get(), d_targets.get(), d_lse_ref.get(), d_dlogits.get(), s.rows,
                                       s.classes, s.label_smoothing, s.ignore_index, scale, stream.get());
  stream.sync();
  const std::vector<float> losses = d_losses.download(), lse = d_lse.download(), dlogits = d_dlogits.download();
  const float loss_sum = d_loss_sum.download()[0];
  const int64_t counted = d_counted.download()[0];

  EXPECT_EQ(0u, test::count_unwritten(losses));
  EXPECT_EQ(0u, test::count_unwritten(lse));
  EXPECT_EQ(0u, test::count_unwritten(dlogits));
  EXPECT_GT(test::l2_norm(losses), 0.0);
  EXPECT_GT(test::l2_norm(dlogits), 0.0);
  auto c = test::compare_close(losses, to_double(losses_ref), kLossAtol, kLossRtol);
  EXPECT_TRUE(c.ok()) << "losses: " << c.description;
  c = test::compare_close(lse, to_double(lse_ref), kLossAtol, kLossRtol);
  EXPECT_TRUE(c.ok()) << "saved_logsumexp: " << c.description;
  EXPECT_EQ(counted_ref, counted);
  EXPECT_NEAR(loss_sum_ref, loss_sum, kLossSumRtol * std::fabs(loss_sum_ref)) << "loss_sum";
  const double grad_atol = scale * (s.large_logits ? kGradAtolPerScaleLargeLogits
                                                   : kGradAtolPerScaleClass / static_cast<double>(s.classes));
  c = test::compare_close(dlogits, to_double(dlogits_ref), grad_atol, kGradRtol);
  EXPECT_TRUE(c.ok()) << "dlogits: " << c.description;

  // Ignored rows: loss and gradient exactly 0.
  size_t nonzero_ignored = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (targets[r] != s.ignore_index) continue;
    nonzero_ignored += losses[r] != 0.0f;
    for (size_t k = 0; k < static_cast<size_t>(s.classes); ++k) nonzero_ignored += dlogits[r * s.classes + k] != 0.0f;
  }
  EXPECT_EQ(0u, nonzero_ignored);

  // The sum has no atomics: a second forward gives the same bits.
  d_loss_sum.poison();
  cuda::softmax_cross_entropy_forward(d_logits.get(), d_targets.get(), d_losses.get(), d_lse.get(), d_loss_sum.get(),
                                      d_counted.get(), s.rows, s.classes, s.label_smoothing, s.ignore_index,
                                      stream.get());
  stream.sync();
  const float loss_sum_again = d_loss_sum.download()[0];
  EXPECT_EQ(0, std::memcmp(&loss_sum, &loss_sum_again, sizeof(float))) << "loss_sum not reproducible";
}

TEST(CudaCrossEntropy, Vocab32kLabelSmoothingIgnoredRows) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({96, 32768, 0.1f, 1, 4, false}, 61);  // Transformer Big: eps 0.1, padding id 1 ignored
}

TEST(CudaCrossEntropy, OddClassesNoSmoothing) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({37, 769, 0.0f, cpu::kNoIgnoreIndex, 0, false}, 62);  // scalar path
}

TEST(CudaCrossEntropy, LargeLogitsWithSmoothing) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({37, 1000, 0.1f, -100, 5, true}, 63);  // HF's ignore_index -100
}

// Few classes take the thread-per-row forward and thread-per-logit backward; 150,000 rows make the loss sum
// span 49 chunks (deeplabv3's pixel-wise loss: 21 classes, border label 255).
TEST(CudaCrossEntropy, PixelwiseClasses21ManyChunks) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({150000, 21, 0.0f, 255, 7, false}, 65);
}

TEST(CudaCrossEntropy, SixtyFourClassesLargeLogitsWithSmoothing) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({777, 64, 0.1f, -100, 5, true}, 66);
}

TEST(CudaCrossEntropy, Classes65521) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_cross_entropy({8, 65521, 0.1f, -100, 3, false}, 64);
}

TEST(CudaCrossEntropy, ZeroRowsWriteZeroSums) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  TestStream stream;
  CudaArray<float> d_loss_sum(1);
  CudaArray<int64_t> d_counted(1);
  d_loss_sum.poison();
  d_counted.poison();
  cuda::softmax_cross_entropy_forward<float>(nullptr, nullptr, nullptr, nullptr, d_loss_sum.get(), d_counted.get(), 0,
                                             10, 0.1f, -100, stream.get());
  stream.sync();
  EXPECT_EQ(0.0f, d_loss_sum.download()[0]);
  EXPECT_EQ(0, d_counted.download()[0]);
}

// A target that is neither a class nor ignore_index: that row's loss and gradient are NaN (and loss_sum with
// them), the other rows are untouched by it, and nothing is read outside the logits.
TEST(CudaCrossEntropy, OutOfRangeTargetIsLoud) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t rows = 4, classes = 16;
  const std::vector<float> logits = test::random_normal(static_cast<size_t>(rows * classes), 71);
  const std::vector<int32_t> targets = {3, static_cast<int32_t>(classes), -100, -7};
  TestStream stream;
  CudaArray<float> d_logits(logits), d_losses(rows), d_lse(rows), d_loss_sum(1), d_dlogits(rows * classes);
  CudaArray<int32_t> d_targets(targets);
  CudaArray<int64_t> d_counted(1);
  d_losses.poison();
  d_dlogits.poison();
  cuda::softmax_cross_entropy_forward(d_logits.get(), d_targets.get(), d_losses.get(), d_lse.get(), d_loss_sum.get(),
                                      d_counted.get(), rows, classes, 0.1f, -100, stream.get());
  cuda::softmax_cross_entropy_backward(d_logits.get(), d_targets.get(), d_lse.get(), d_dlogits.get(), rows, classes,
                                       0.1f, -100, 1.0f, stream.get());
  stream.sync();
  const std::vector<float> losses = d_losses.download(), dlogits = d_dlogits.download();
  EXPECT_TRUE(std::isfinite(losses[0]) && losses[0] > 0.0f);
  EXPECT_TRUE(std::isnan(losses[1]));
  EXPECT_EQ(0.0f, losses[2]);
  EXPECT_TRUE(std::isnan(losses[3]));
  EXPECT_TRUE(std::isnan(d_loss_sum.download()[0]));
  EXPECT_EQ(3, d_counted.download()[0]);
  for (int64_t k = 0; k < classes; ++k) {
    EXPECT_TRUE(std::isfinite(dlogits[k]));
    EXPECT_TRUE(std::isnan(dlogits[classes + k]));
    EXPECT_EQ(0.0f, dlogits[2 * classes + k]);
    EXPECT_TRUE(std::isnan(dlogits[3 * classes + k]));
  }
}

}  // namespace
}  // namespace sb
