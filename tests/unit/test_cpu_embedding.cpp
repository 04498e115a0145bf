// sb::cpu::embedding_forward/embedding_backward_accumulate (src/cpu/embedding.h): exact gathers, scatter-add of
// repeated ids against a naive loop (small integers, so exact in any order), gradients of a tied table used
// twice, fairseq/torch padding_idx, finite differences, and death on an out-of-range id.
// Run: unit_tests --gtest_filter='CpuEmbedding*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "src/cpu/embedding.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
constexpr double kGradientTolerance = 1e-2;



// Small integers in [-8, 8] (never all zero): every sum of them is exact in fp32 whatever the order.
std::vector<float> small_integers(size_t count, uint32_t seed) {
  const std::vector<int32_t> ids = test::random_ids(count, seed, -8, 8);
  return std::vector<float>(ids.begin(), ids.end());
}

// The obvious loop, token by token, skipping the padding row.
void naive_scatter_add(const std::vector<int32_t>& ids, const std::vector<float>& dout, std::vector<float>& dtable,
                       int64_t dim, int64_t padding_idx) {
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] == padding_idx) continue;
    for (int64_t c = 0; c < dim; ++c) dtable[ids[t] * dim + c] += dout[t * dim + c];
  }
}

TEST(CpuEmbedding, ForwardGathersExactRows) {
  struct Shape {
    int64_t tokens, dim, vocab;
  };
  uint32_t seed = 1;
  for (const Shape& s : {Shape{1, 1, 1}, Shape{50, 13, 37}, Shape{129, 64, 1000}}) {
    const std::vector<float> table = test::random_normal(s.vocab * s.dim, ++seed);
    const std::vector<int32_t> ids = test::random_ids(s.tokens, ++seed, 0, static_cast<int32_t>(s.vocab - 1));
    std::vector<float> out(s.tokens * s.dim, kPoison);
    cpu::embedding_forward(ids.data(), table.data(), out.data(), s.tokens, s.dim, s.vocab);
    ASSERT_EQ(test::count_non_finite(out), 0u);
    EXPECT_GT(test::l2_norm(out), 0);
    for (int64_t t = 0; t < s.tokens; ++t) {
      EXPECT_EQ(std::memcmp(&out[t * s.dim], &table[ids[t] * s.dim], s.dim * sizeof(float)), 0) << "token " << t;
    }
  }
}

TEST(CpuEmbedding, BackwardSumsRepeatedIdsExactly) {
  const int64_t tokens = 97, dim = 11, vocab = 6;  // ~16 uses of each id
  const std::vector<int32_t> ids = test::random_ids(tokens, 3, 0, vocab - 1);
  const std::vector<float> dout = small_integers(tokens * dim, 4);
  const std::vector<float> initial = small_integers(vocab * dim, 5);  // accumulate adds to what is there

  std::vector<float> dtable = initial;
  cpu::embedding_backward_accumulate(ids.data(), dout.data(), dtable.data(), tokens, dim, vocab, cpu::kNoPaddingIdx);
  std::vector<float> want = initial;
  naive_scatter_add(ids, dout, want, dim, cpu::kNoPaddingIdx);
  EXPECT_EQ(dtable, want);
  EXPECT_NE(dtable, initial);
}

TEST(CpuEmbedding, BackwardMatchesNaiveLoopOnRandomData) {
  const int64_t tokens = 300, dim = 17, vocab = 23;
  const std::vector<int32_t> ids = test::random_ids(tokens, 6, 0, vocab - 1);
  const std::vector<float> dout = test::random_normal(tokens * dim, 7);
  const std::vector<float> initial = test::random_normal(vocab * dim, 8);
  std::vector<float> dtable = initial;
  cpu::embedding_backward_accumulate(ids.data(), dout.data(), dtable.data(), tokens, dim, vocab, cpu::kNoPaddingIdx);
  std::vector<double> want(initial.begin(), initial.end());  // fp64 naive loop
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < dim; ++c) want[ids[t] * dim + c] += dout[t * dim + c];
  }
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(dtable[i], want[i], 1e-6 + 1e-6 * std::fabs(want[i])) << i;  // one fp32 rounding of the sum
  }
}

// Transformer Big's one table feeds the encoder and decoder lookups (and the output GEMM): each use adds.
TEST(CpuEmbedding, TiedTableGradientsAdd) {
  const int64_t dim = 9, vocab = 15, source_tokens = 21, target_tokens = 26;
  std::vector<float> table = test::random_normal(vocab * dim, 11);
  const std::vector<int32_t> source = test::random_ids(source_tokens, 12, 0, vocab - 1);
  const std::vector<int32_t> target = test::random_ids(target_tokens, 13, 0, vocab - 1);
  const std::vector<float> w_source = test::random_normal(source_tokens * dim, 14);
  const std::vector<float> w_target = test::random_normal(target_tokens * dim, 15);
  std::vector<float> out_source(source_tokens * dim), out_target(target_tokens * dim);
  auto loss = [&] {
    cpu::embedding_forward(source.data(), table.data(), out_source.data(), source_tokens, dim, vocab);
    cpu::embedding_forward(target.data(), table.data(), out_target.data(), target_tokens, dim, vocab);
    return test::project(out_source, w_source) + test::project(out_target, w_target);
  };
  // The gradient accumulator starts at 0 as the engine's zeroed gradient buffer does; the data is random.
  std::vector<float> dtable(vocab * dim, 0.0f);
  cpu::embedding_backward_accumulate(source.data(), w_source.data(), dtable.data(), source_tokens, dim, vocab,
                                     cpu::kNoPaddingIdx);
  cpu::embedding_backward_accumulate(target.data(), w_target.data(), dtable.data(), target_tokens, dim, vocab,
                                     cpu::kNoPaddingIdx);
  const auto check = test::compare_with_finite_differences(table, loss, dtable);
  EXPECT_LE(check.relative_error, kGradientTolerance) << check.describe();
  EXPECT_GT(check.analytic_norm, 0);

  // Two calls equal one call over the concatenated uses.
  std::vector<int32_t> both_ids = source;
  both_ids.insert(both_ids.end(), target.begin(), target.end());
  std::vector<float> both_w = w_source;
  both_w.insert(both_w.end(), w_target.begin(), w_target.end());
  std::vector<float> dtable_once(vocab * dim, 0.0f);
  cpu::embedding_backward_accumulate(both_ids.data(), both_w.data(), dtable_once.data(),
                                     source_tokens + target_tokens, dim, vocab, cpu::kNoPaddingIdx);
  for (size_t i = 0; i < dtable.size(); ++i) EXPECT_NEAR(dtable[i], dtable_once[i], 1e-5) << i;
}

TEST(CpuEmbedding, TableGradientMatchesFiniteDifferences) {
  const int64_t tokens = 40, dim = 7, vocab = 31;
  std::vector<float> table = test::random_normal(vocab * dim, 21);
  const std::vector<int32_t> ids = test::random_ids(tokens, 22, 0, vocab - 1);
  const std::vector<float> w = test::random_normal(tokens * dim, 23);
  std::vector<float> out(tokens * dim);
  auto loss = [&] {
    cpu::embedding_forward(ids.data(), table.data(), out.data(), tokens, dim, vocab);
    return test::project(out, w);
  };
  std::vector<float> dtable(vocab * dim, 0.0f);  // the accumulator, not an input
  cpu::embedding_backward_accumulate(ids.data(), w.data(), dtable.data(), tokens, dim, vocab, cpu::kNoPaddingIdx);
  const auto check = test::compare_with_finite_differences(table, loss, dtable);
  EXPECT_LE(check.relative_error, kGradientTolerance) << check.describe();
  EXPECT_GT(check.analytic_norm, 0);
}

// torch.nn.Embedding(padding_idx=1), as fairseq's dictionaries put <pad> at 1: the padding row is left exactly
// as it was, every other row gets what it would get without padding_idx.
TEST(CpuEmbedding, PaddingRowGetsNoGradient) {
  const int64_t tokens = 60, dim = 5, vocab = 8, padding_idx = 1;
  const std::vector<int32_t> ids = test::random_ids(tokens, 31, 0, vocab - 1);
  ASSERT_NE(std::count(ids.begin(), ids.end(), padding_idx), 0);
  const std::vector<float> dout = small_integers(tokens * dim, 32);
  const std::vector<float> initial = small_integers(vocab * dim, 33);

  std::vector<float> with_padding = initial;
  cpu::embedding_backward_accumulate(ids.data(), dout.data(), with_padding.data(), tokens, dim, vocab, padding_idx);
  std::vector<float> want = initial;
  naive_scatter_add(ids, dout, want, dim, padding_idx);
  EXPECT_EQ(with_padding, want);
  for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(with_padding[padding_idx * dim + c], initial[padding_idx * dim + c]);

  std::vector<float> without_padding = initial;
  cpu::embedding_backward_accumulate(ids.data(), dout.data(), without_padding.data(), tokens, dim, vocab,
                                     cpu::kNoPaddingIdx);
  for (int64_t i = 0; i < vocab * dim; ++i) {
    if (i / dim != padding_idx) {
      EXPECT_EQ(with_padding[i], without_padding[i]) << i;
    }
  }
  EXPECT_NE(with_padding, without_padding);  // the padding row did receive gradient without padding_idx
}

TEST(CpuEmbeddingDeathTest, OutOfRangeIdIsFatal) {
  const int64_t tokens = 4, dim = 3, vocab = 10;
  const std::vector<float> table = test::random_normal(vocab * dim, 41);
  std::vector<float> out(tokens * dim), dtable(vocab * dim, 0.0f);
  const std::vector<int32_t> too_large = {2, 5, 10, 1};
  const std::vector<int32_t> negative = {2, -1, 3, 1};
  EXPECT_DEATH(cpu::embedding_forward(too_large.data(), table.data(), out.data(), tokens, dim, vocab),
               "id 10 of token 2 is out of range \\[0, 10\\)");
  EXPECT_DEATH(cpu::embedding_forward(negative.data(), table.data(), out.data(), tokens, dim, vocab),
               "id -1 of token 1 is out of range");
  EXPECT_DEATH(cpu::embedding_backward_accumulate(too_large.data(), out.data(), dtable.data(), tokens, dim, vocab,
                                                  cpu::kNoPaddingIdx),
               "embedding_backward_accumulate: id 10 of token 2 is out of range");
}

}  // namespace
}  // namespace sb
