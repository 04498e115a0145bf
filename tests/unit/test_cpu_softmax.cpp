// sb::cpu::masked_softmax_forward/backward (src/cpu/softmax.h): forward against an fp64 softmax with -inf
// masking, rows summing to 1, masked probabilities exactly 0 (key padding, causal, both, empty sequences),
// invariance to whatever the padded scores hold, and finite-difference checks of dscores.
// Run: unit_tests --gtest_filter='CpuSoftmax*'.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "src/cpu/softmax.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
constexpr float kScale = 0.125f;  // 1/sqrt(64), the head size of both reference models
// fp32 storage of an fp64 softmax: probabilities are <= 1, so a few ulps of 1.
constexpr double kForwardAtol = 1e-6;
constexpr double kForwardRtol = 1e-5;
constexpr double kGradientTolerance = 1e-2;

struct Case {
  int64_t batch, heads, q_len, k_len;
  std::vector<int32_t> key_lengths;  // empty: no padding
  bool causal;

  size_t size() const { return static_cast<size_t>(batch * heads * q_len * k_len); }
  const int32_t* lengths() const { return key_lengths.empty() ? nullptr : key_lengths.data(); }
  std::string describe() const {
    std::string text = std::to_string(batch) + "x" + std::to_string(heads) + "x" + std::to_string(q_len) + "x" +
                       std::to_string(k_len) + (causal ? " causal" : "") + " lengths";
    for (int32_t l : key_lengths) text += " " + std::to_string(l);
    return text;
  }
  // Row index of (b, h, q) and whether key k of it is masked.
  int64_t row(int64_t b, int64_t h, int64_t q) const { return ((b * heads + h) * q_len + q) * k_len; }
  bool masked(int64_t b, int64_t q, int64_t k) const {
    return (!key_lengths.empty() && k >= key_lengths[b]) || (causal && k > q);
  }
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {2, 3, 5, 7, {}, false},            // plain, q_len != k_len (cross-attention)
      {3, 2, 4, 9, {9, 3, 1}, false},     // key padding
      {2, 3, 6, 6, {}, true},             // decoder self-attention
      {3, 2, 7, 7, {7, 4, 0}, true},      // both, with an empty sequence
      {1, 1, 1, 1, {}, false},            // single key: probability exactly 1
  };
  return all;
}



std::vector<float> run_forward(const Case& c, const std::vector<float>& scores) {
  std::vector<float> probs(c.size(), kPoison);
  cpu::masked_softmax_forward(scores.data(), probs.data(), c.batch, c.heads, c.q_len, c.k_len, kScale,
                              c.lengths(), c.causal);
  return probs;
}

TEST(CpuSoftmax, ForwardMatchesDoubleFormula) {
  uint32_t seed = 10;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.describe());
    const std::vector<float> scores = test::random_normal(c.size(), ++seed, 4.0f);
    const std::vector<float> probs = run_forward(c, scores);
    ASSERT_EQ(test::count_non_finite(probs), 0u);
    EXPECT_GT(test::l2_norm(scores), 0);
    EXPECT_GT(test::l2_norm(probs), 0);
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t h = 0; h < c.heads; ++h) {
        for (int64_t q = 0; q < c.q_len; ++q) {
          const int64_t row = c.row(b, h, q);
          std::vector<double> logits(c.k_len);
          double max_logit = -INFINITY, sum = 0;
          for (int64_t k = 0; k < c.k_len; ++k) {
            logits[k] = c.masked(b, q, k) ? -INFINITY : static_cast<double>(kScale) * scores[row + k];
            max_logit = std::max(max_logit, logits[k]);
          }
          for (int64_t k = 0; k < c.k_len; ++k) sum += c.masked(b, q, k) ? 0.0 : std::exp(logits[k] - max_logit);
          for (int64_t k = 0; k < c.k_len; ++k) {
            const double want = c.masked(b, q, k) ? 0.0 : std::exp(logits[k] - max_logit) / sum;
            EXPECT_NEAR(probs[row + k], want, kForwardAtol + kForwardRtol * want)
                << "b " << b << " h " << h << " q " << q << " k " << k;
          }
        }
      }
    }
  }
}

TEST(CpuSoftmax, RowsSumToOneAndMaskedProbabilitiesAreExactlyZero) {
  uint32_t seed = 40;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.describe());
    const std::vector<float> probs = run_forward(c, test::random_normal(c.size(), ++seed, 4.0f));
    ASSERT_EQ(test::count_non_finite(probs), 0u);
    for (int64_t b = 0; b < c.batch; ++b) {
      const bool empty = !c.key_lengths.empty() && c.key_lengths[b] == 0;
      for (int64_t h = 0; h < c.heads; ++h) {
        for (int64_t q = 0; q < c.q_len; ++q) {
          double sum = 0;
          int64_t positive = 0;
          for (int64_t k = 0; k < c.k_len; ++k) {
            const float p = probs[c.row(b, h, q) + k];
            if (c.masked(b, q, k)) {
              EXPECT_EQ(p, 0.0f) << "masked b " << b << " q " << q << " k " << k;
              EXPECT_FALSE(std::signbit(p));
            } else {
              positive += p > 0.0f ? 1 : 0;
              sum += p;
            }
          }
          // An empty sequence's rows are all zeros (documented), every other row a distribution whose every
          // unmasked key has a non-zero share (scores are O(1), far from underflow).
          EXPECT_NEAR(sum, empty ? 0.0 : 1.0, 1e-6) << "b " << b << " h " << h << " q " << q;
          int64_t unmasked = 0;
          for (int64_t k = 0; k < c.k_len; ++k) unmasked += c.masked(b, q, k) ? 0 : 1;
          EXPECT_EQ(positive, unmasked);
        }
      }
    }
  }
}

TEST(CpuSoftmax, CausalRowsSeeOnlyThePast) {
  const Case c{2, 2, 8, 8, {}, true};
  const std::vector<float> probs = run_forward(c, test::random_normal(c.size(), 77, 3.0f));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      EXPECT_EQ(probs[c.row(b, h, 0)], 1.0f);  // the first query sees only itself
      for (int64_t q = 0; q < c.q_len; ++q) {
        for (int64_t k = 0; k < c.k_len; ++k) {
          const float p = probs[c.row(b, h, q) + k];
          if (k <= q) {
            EXPECT_GT(p, 0.0f) << "q " << q << " k " << k;
          } else {
            EXPECT_EQ(p, 0.0f) << "q " << q << " k " << k;
          }
        }
      }
    }
  }
}

// Padding must behave as if the padded keys did not exist: the same probabilities as the unpadded problem,
// whatever (huge, NaN) the padded scores hold.
TEST(CpuSoftmax, KeyPaddingEqualsTheUnpaddedProblem) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    const Case padded{3, 2, 6, 6, {6, 4, 1}, causal};
    std::vector<float> scores = test::random_normal(padded.size(), 5, 2.0f);
    for (int64_t b = 0; b < padded.batch; ++b) {
      for (int64_t h = 0; h < padded.heads; ++h) {
        for (int64_t q = 0; q < padded.q_len; ++q) {
          for (int64_t k = padded.key_lengths[b]; k < padded.k_len; ++k) {
            scores[padded.row(b, h, q) + k] = (k % 2 == 0) ? 1e30f : kPoison;
          }
        }
      }
    }
    const std::vector<float> probs = run_forward(padded, scores);
    ASSERT_EQ(test::count_non_finite(probs), 0u);
    for (int64_t b = 0; b < padded.batch; ++b) {
      const int64_t length = padded.key_lengths[b];
      const Case alone{1, padded.heads, padded.q_len, length, {}, causal};
      std::vector<float> alone_scores(alone.size());
      for (int64_t h = 0; h < alone.heads; ++h) {
        for (int64_t q = 0; q < alone.q_len; ++q) {
          for (int64_t k = 0; k < length; ++k) alone_scores[alone.row(0, h, q) + k] = scores[padded.row(b, h, q) + k];
        }
      }
      const std::vector<float> alone_probs = run_forward(alone, alone_scores);
      for (int64_t h = 0; h < alone.heads; ++h) {
        for (int64_t q = 0; q < alone.q_len; ++q) {
          for (int64_t k = 0; k < length; ++k) {
            EXPECT_EQ(probs[padded.row(b, h, q) + k], alone_probs[alone.row(0, h, q) + k])
                << "b " << b << " h " << h << " q " << q << " k " << k;
          }
        }
      }
    }
  }
}

TEST(CpuSoftmax, EmptySequenceGivesZerosNotNaN) {
  const Case c{2, 3, 4, 5, {0, 5}, false};
  const std::vector<float> probs = run_forward(c, test::random_normal(c.size(), 9));
  ASSERT_EQ(test::count_non_finite(probs), 0u);
  for (int64_t i = 0; i < c.heads * c.q_len * c.k_len; ++i) EXPECT_EQ(probs[i], 0.0f) << i;

  std::vector<float> dscores(c.size(), kPoison);
  const std::vector<float> dprobs = test::random_normal(c.size(), 10);
  cpu::masked_softmax_backward(probs.data(), dprobs.data(), dscores.data(), c.batch, c.heads, c.q_len, c.k_len,
                               kScale, c.lengths(), c.causal);
  ASSERT_EQ(test::count_non_finite(dscores), 0u);
  for (int64_t i = 0; i < c.heads * c.q_len * c.k_len; ++i) EXPECT_EQ(dscores[i], 0.0f) << i;
  EXPECT_GT(test::l2_norm(dscores), 0);  // the second sequence still has gradient
}

TEST(CpuSoftmax, BackwardMatchesFiniteDifferences) {
  uint32_t seed = 200;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.describe());
    std::vector<float> scores = test::random_normal(c.size(), ++seed, 3.0f);
    const std::vector<float> w = test::random_normal(c.size(), ++seed);  // L = sum w * probs, so dprobs = w
    std::vector<float> probs(c.size());
    auto loss = [&] {
      cpu::masked_softmax_forward(scores.data(), probs.data(), c.batch, c.heads, c.q_len, c.k_len, kScale,
                                  c.lengths(), c.causal);
      return test::project(probs, w);
    };
    loss();
    std::vector<float> dscores(c.size(), kPoison);
    cpu::masked_softmax_backward(probs.data(), w.data(), dscores.data(), c.batch, c.heads, c.q_len, c.k_len,
                                 kScale, c.lengths(), c.causal);
    ASSERT_EQ(test::count_non_finite(dscores), 0u);
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t h = 0; h < c.heads; ++h) {
        for (int64_t q = 0; q < c.q_len; ++q) {
          for (int64_t k = 0; k < c.k_len; ++k) {
            if (c.masked(b, q, k)) {
              EXPECT_EQ(dscores[c.row(b, h, q) + k], 0.0f);
            }
          }
        }
      }
    }
    const auto check = test::compare_with_finite_differences(scores, loss, dscores);
    if (c.k_len == 1) {
      // One key: the probability is 1 whatever the score, so the gradient is exactly 0 both ways.
      EXPECT_EQ(check.analytic_norm, 0.0);
      EXPECT_EQ(check.numeric_norm, 0.0);
      continue;
    }
    EXPECT_LE(check.relative_error, kGradientTolerance) << check.describe();
    EXPECT_GT(check.analytic_norm, 0);
  }
}

// The documented contract: whatever dprobs holds at masked keys (here NaN) cannot reach dscores.
TEST(CpuSoftmax, BackwardIgnoresDprobsAtMaskedKeys) {
  const Case c{2, 2, 5, 5, {5, 3}, true};
  const std::vector<float> probs = run_forward(c, test::random_normal(c.size(), 31));
  std::vector<float> dprobs = test::random_normal(c.size(), 32);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t q = 0; q < c.q_len; ++q) {
        for (int64_t k = 0; k < c.k_len; ++k) {
          if (c.masked(b, q, k)) dprobs[c.row(b, h, q) + k] = kPoison;
        }
      }
    }
  }
  std::vector<float> dscores(c.size(), kPoison);
  cpu::masked_softmax_backward(probs.data(), dprobs.data(), dscores.data(), c.batch, c.heads, c.q_len, c.k_len,
                               kScale, c.lengths(), c.causal);
  EXPECT_EQ(test::count_non_finite(dscores), 0u);
  EXPECT_GT(test::l2_norm(dscores), 0);
}

}  // namespace
}  // namespace sb
