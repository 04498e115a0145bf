// sb::cpu::dropout_forward / dropout_backward (src/cpu/dropout.h): the documented element -> Philox counter
// mapping recomputed independently, kept fraction within binomial bounds, reproducibility from (seed, offset),
// offsets as positions in one stream, exact scaling, p = 0 identity, and a backward that follows the saved
// mask. Run: build/tests/unit_tests --gtest_filter='CpuDropout*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cpu/dropout.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr uint8_t kMaskPoison = 0xAB;        // neither 0 nor 1: an unwritten mask byte shows
constexpr double kBinomialSigmas = 5.0;      // kept-count tolerance, in standard deviations
constexpr double kGradientTolerance = 1e-2;  // finite differences, eps 1e-3, fp32 outputs

struct Result {
  std::vector<float> y;
  std::vector<uint8_t> mask;
};

Result run_dropout(const std::vector<float>& x, float p, uint64_t seed, uint64_t offset) {
  Result r{test::poisoned(x.size()), std::vector<uint8_t>(x.size(), kMaskPoison)};
  cpu::dropout_forward(x.data(), r.y.data(), r.mask.data(), static_cast<int64_t>(x.size()), p, seed, offset);
  return r;
}

size_t count_kept(const std::vector<uint8_t>& mask) {
  size_t kept = 0;
  for (uint8_t m : mask) kept += m;
  return kept;
}

// The header's contract, element by element; a seed with both key words set and an offset whose blocks
// cross the 32-bit boundary of the counter.
TEST(CpuDropout, FollowsTheDocumentedCounterMapping) {
  const uint64_t seed = 0x123456789abcdef0ull, offset = 0xfffffffdull;
  const float p = 0.3f;
  const auto x = test::random_normal(39, 1);
  const Result r = run_dropout(x, p, seed, offset);
  for (size_t i = 0; i < x.size(); ++i) {
    const PhiloxCounter counter = {{static_cast<uint32_t>((offset + i / 4) & 0xffffffffu),
                                    static_cast<uint32_t>((offset + i / 4) >> 32), 0u, 0u}};
    const PhiloxKey key = {{0x9abcdef0u, 0x12345678u}};
    const uint32_t bits = philox4x32(counter, key).word[i % 4];
    const bool keep = static_cast<float>(bits >> 8) / 16777216.0f >= p;
    ASSERT_EQ(r.mask[i], keep ? 1 : 0) << "element " << i;
  }
  EXPECT_GT(count_kept(r.mask), 0u);
  EXPECT_LT(count_kept(r.mask), x.size());
}

TEST(CpuDropout, KeptFractionIsBinomial) {
  const auto x = test::random_normal(100003, 2);  // not a multiple of 4: the last block is partial
  for (float p : {0.1f, 0.3f, 0.5f, 0.9f}) {
    const Result r = run_dropout(x, p, 7, 0);
    const double n = x.size(), expected = n * (1 - p), sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(double(count_kept(r.mask)), expected, kBinomialSigmas * sd) << "p " << p;
    EXPECT_EQ(test::count_unwritten(r.y), 0u);
    EXPECT_GT(test::l2_norm(r.y), 0.0);
  }
}

// y is exactly x * (1/(1-p)) (one fp32 multiply by the fp32 scale) where kept and exactly 0 elsewhere;
// every mask byte is 0 or 1.
TEST(CpuDropout, ScalingIsExact) {
  const auto x = test::random_normal(1001, 3);
  for (float p : {0.1f, 0.3f}) {
    const Result r = run_dropout(x, p, 11, 5);
    const float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(r.mask[i] == 0 || r.mask[i] == 1) << "mask byte " << i << " unwritten";
      ASSERT_EQ(r.y[i], r.mask[i] ? x[i] * scale : 0.0f) << i;
    }
    EXPECT_GT(test::l2_norm(x), 0.0);
    EXPECT_GT(test::l2_norm(r.y), 0.0);
  }
}

TEST(CpuDropout, ProbabilityZeroIsIdentity) {
  const auto x = test::random_normal(37, 4);
  const Result r = run_dropout(x, 0.0f, 99, 123);
  EXPECT_EQ(r.y, x);
  EXPECT_EQ(count_kept(r.mask), x.size());
}

TEST(CpuDropout, SameSeedAndOffsetGiveTheSameMask) {
  const auto x = test::random_normal(513, 5);
  const Result a = run_dropout(x, 0.5f, 2024, 17);
  const Result b = run_dropout(x, 0.5f, 2024, 17);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.y, b.y);
}

// Another offset or seed gives an independent mask: two masks with p = 0.5 agree on about half the elements.
TEST(CpuDropout, DifferentOffsetOrSeedGivesAnotherMask) {
  const size_t n = 4000;
  const auto x = test::random_normal(n, 6);
  const Result base = run_dropout(x, 0.5f, 2024, 0);
  const Result shifted = run_dropout(x, 0.5f, 2024, n / 4);  // the next call's offset: disjoint blocks
  const Result reseeded = run_dropout(x, 0.5f, 2025, 0);
  for (const Result* other : {&shifted, &reseeded}) {
    size_t agree = 0;
    for (size_t i = 0; i < n; ++i) agree += base.mask[i] == other->mask[i] ? 1 : 0;
    EXPECT_NEAR(double(agree), n / 2.0, kBinomialSigmas * std::sqrt(n * 0.25));
  }
}

// An offset is a position in one stream of blocks: starting k blocks later reproduces the tail from
// element 4k on, so the engine may split one tensor's dropout into chunks.
TEST(CpuDropout, OffsetsArePositionsInOneStream) {
  const auto x = test::random_normal(50, 7);
  const Result whole = run_dropout(x, 0.4f, 31, 1000);
  for (uint64_t k : {1u, 3u, 12u}) {
    const std::vector<float> tail(x.begin() + 4 * k, x.end());
    const Result part = run_dropout(tail, 0.4f, 31, 1000 + k);
    for (size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(part.mask[i], whole.mask[4 * k + i]) << k << " " << i;
  }
}

// The backward reads the saved mask and draws nothing: a hand-made mask is followed exactly.
TEST(CpuDropout, BackwardFollowsTheSavedMask) {
  const int64_t n = 23;
  const float p = 0.25f, scale = 1.0f / (1.0f - p);
  const auto dy = test::random_normal(n, 8);
  std::vector<uint8_t> mask(n);
  for (int64_t i = 0; i < n; ++i) mask[i] = (i % 3 == 0) ? 1 : 0;
  std::vector<float> dx = test::poisoned(n);
  cpu::dropout_backward(dy.data(), mask.data(), dx.data(), n, p);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dx[i], mask[i] ? dy[i] * scale : 0.0f) << i;
  EXPECT_GT(test::l2_norm(dx), 0.0);
}

// With (seed, offset) fixed the op is linear in x; its gradient through the saved mask matches.
TEST(CpuDropout, GradientMatchesFiniteDifferences) {
  const int64_t n = 64;
  const float p = 0.3f;
  auto x = test::random_normal(n, 9);
  const auto w = test::random_normal(n, 10);
  auto loss = [&] { return test::project(run_dropout(x, p, 77, 3).y, w); };
  const Result forward = run_dropout(x, p, 77, 3);
  std::vector<float> dx = test::poisoned(n);
  cpu::dropout_backward(w.data(), forward.mask.data(), dx.data(), n, p);
  const auto g = test::compare_with_finite_differences(x, loss, dx);
  EXPECT_LE(g.relative_error, kGradientTolerance) << g.describe();
  EXPECT_GT(g.analytic_norm, 0.0);
}

TEST(CpuDropout, RejectsProbabilityOutsideZeroToOne) {
  float v = 1.0f;
  uint8_t m = 0;
  EXPECT_THROW(cpu::dropout_forward(&v, &v, &m, 1, 1.0f, 0, 0), UsageError);
  EXPECT_THROW(cpu::dropout_forward(&v, &v, &m, 1, -0.1f, 0, 0), UsageError);
  EXPECT_THROW(cpu::dropout_forward(&v, &v, &m, 1, std::nanf(""), 0, 0), UsageError);
  EXPECT_THROW(cpu::dropout_backward(&v, &m, &v, 1, 1.0f), UsageError);
  EXPECT_THROW(cpu::dropout_forward(&v, &v, &m, -1, 0.1f, 0, 0), UsageError);
}

}  // namespace
}  // namespace sb
