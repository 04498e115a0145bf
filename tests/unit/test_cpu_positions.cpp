// sb::cpu::sinusoidal_positions, make_positions, positions_from_lengths (src/cpu/positions.h): the table against
// the closed form in fp64 within fairseq's fp32 rounding, hand-checked entries, the zero padding row and odd
// dims, and position ids as fairseq's make_positions gives them for left- and right-padded batches.
// Run: unit_tests --gtest_filter='CpuPositions*'.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "src/cpu/positions.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kFairseqPad = 1;  // fairseq's Dictionary puts <pad> at index 1
constexpr double kFp32Epsilon = 1.0 / (1 << 24);  // unit roundoff of fp32


std::vector<float> make_table(int64_t positions, int64_t dim, int64_t padding_idx) {
  std::vector<float> table(positions * dim, kPoison);
  cpu::sinusoidal_positions(table.data(), positions, dim, padding_idx);
  return table;
}

// The exact sinusoid in fp64. The table follows fairseq's fp32 arithmetic, whose angle p * f carries a
// relative error of about (2 |exponent| + 3) fp32 roundoffs (the step, the exponent, exp, the product), so the
// allowed difference grows with the angle; a wrong frequency spacing is off by far more.
TEST(CpuPositions, TableMatchesClosedForm) {
  const int64_t dims[] = {4, 8, 9, 64, 1024};
  for (int64_t dim : dims) {
    SCOPED_TRACE(::testing::Message() << "dim " << dim);
    const int64_t positions = 259;
    const std::vector<float> table = make_table(positions, dim, kFairseqPad);
    ASSERT_EQ(test::count_non_finite(table), 0u);
    const int64_t half = dim / 2;
    const double step = std::log(10000.0) / static_cast<double>(half - 1);
    double worst_excess = -1;
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        const double exponent = -static_cast<double>(i) * step;
        const double angle = static_cast<double>(p) * std::exp(exponent);
        const double tolerance = 2 * kFp32Epsilon + angle * (2 * std::fabs(exponent) + 3) * kFp32Epsilon;
        const double want_sin = p == kFairseqPad ? 0.0 : std::sin(angle);
        const double want_cos = p == kFairseqPad ? 0.0 : std::cos(angle);
        worst_excess = std::max(worst_excess, std::fabs(table[p * dim + i] - want_sin) - tolerance);
        worst_excess = std::max(worst_excess, std::fabs(table[p * dim + half + i] - want_cos) - tolerance);
        ASSERT_LE(std::fabs(table[p * dim + i] - want_sin), tolerance) << "sin p " << p << " i " << i;
        ASSERT_LE(std::fabs(table[p * dim + half + i] - want_cos), tolerance) << "cos p " << p << " i " << i;
      }
      if (dim % 2 == 1) {
        EXPECT_EQ(table[p * dim + dim - 1], 0.0f) << "odd dim pads with a zero column";
      }
    }
    EXPECT_LE(worst_excess, 0.0);
  }
}

// dim 8: half 4, f_i = 10000^(-i/3) = 1, 0.0464159, 0.00215443, 1e-4.
TEST(CpuPositions, HandCheckedValues) {
  const std::vector<float> table = make_table(4, 8, kFairseqPad);
  const float row0[] = {0, 0, 0, 0, 1, 1, 1, 1};  // sin(0), cos(0): row 0 is not the padding row here
  for (int c = 0; c < 8; ++c) EXPECT_EQ(table[c], row0[c]) << c;
  for (int c = 0; c < 8; ++c) EXPECT_EQ(table[8 + c], 0.0f) << "padding row, column " << c;
  // Row 2 is the first real position (padding_idx + 1 = 2 in fairseq's numbering).
  EXPECT_NEAR(table[16 + 0], 0.9092974268, 1e-7);     // sin(2)
  EXPECT_NEAR(table[16 + 1], 0.0926985008, 1e-7);     // sin(2 * 0.0464159)
  EXPECT_NEAR(table[16 + 3], 1.99999998667e-4, 1e-9);  // sin(2e-4), f_3 within fp32 rounding
  EXPECT_NEAR(table[16 + 4], -0.4161468365, 1e-7);    // cos(2)
  EXPECT_NEAR(table[16 + 7], 0.99999998, 1e-7);       // cos(2e-4)
  EXPECT_NEAR(table[24 + 0], 0.1411200081, 1e-7);     // sin(3)
  EXPECT_NEAR(table[24 + 6], 0.9999791129, 1e-7);     // cos(3 * 0.00215443)
}

TEST(CpuPositions, WithoutPaddingEveryRowIsASinusoid) {
  const std::vector<float> table = make_table(6, 10, cpu::kNoPaddingIdx);
  ASSERT_EQ(test::count_non_finite(table), 0u);
  for (int64_t p = 0; p < 6; ++p) {
    for (int64_t i = 0; i < 5; ++i) {
      const float s = table[p * 10 + i], c = table[p * 10 + 5 + i];
      EXPECT_NEAR(static_cast<double>(s) * s + static_cast<double>(c) * c, 1.0, 1e-6) << p << " " << i;
    }
  }
}

// fairseq's make_positions on a left-padded source batch and a right-padded target batch (pad id 1).
TEST(CpuPositions, MakePositionsAsFairseq) {
  const std::vector<int32_t> tokens = {
      5, 6, 7, 2, 1, 1,  // right padded
      1, 1, 9, 8, 4, 2,  // left padded, as fairseq's source side by default
      1, 1, 1, 1, 1, 1,  // all padding
      4, 4, 4, 4, 4, 2,  // full
  };
  const std::vector<int32_t> want = {
      2, 3, 4, 5, 1, 1,
      1, 1, 2, 3, 4, 5,
      1, 1, 1, 1, 1, 1,
      2, 3, 4, 5, 6, 7,
  };
  std::vector<int32_t> positions(tokens.size(), -7);
  cpu::make_positions(tokens.data(), positions.data(), 4, 6, kFairseqPad);
  EXPECT_EQ(positions, want);
}

TEST(CpuPositions, PositionsFromLengthsEqualMakePositionsOnRightPaddedBatches) {
  const int64_t batch = 9, seq_len = 13;
  std::vector<int32_t> lengths = test::random_ids(batch, 51, 0, seq_len);
  lengths[0] = 0;
  lengths[1] = static_cast<int32_t>(seq_len);
  std::vector<int32_t> tokens = test::random_ids(batch * seq_len, 52, 2, 300);  // real ids never equal <pad>
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = lengths[b]; t < seq_len; ++t) tokens[b * seq_len + t] = kFairseqPad;
  }
  std::vector<int32_t> from_tokens(batch * seq_len, -7), from_lengths(batch * seq_len, -7);
  cpu::make_positions(tokens.data(), from_tokens.data(), batch, seq_len, kFairseqPad);
  cpu::positions_from_lengths(lengths.data(), from_lengths.data(), batch, seq_len, kFairseqPad);
  EXPECT_EQ(from_lengths, from_tokens);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      EXPECT_EQ(from_lengths[b * seq_len + t], t < lengths[b] ? kFairseqPad + 1 + t : kFairseqPad);
    }
  }
}

// End to end as fairseq's forward: ids -> positions -> table rows; padded tokens get the zero row, and the
// first real token of every row gets position padding_idx + 1 whichever side the padding is on.
TEST(CpuPositions, LookupGivesZeroRowsAtPadding) {
  const int64_t batch = 2, seq_len = 5, dim = 12;
  const std::vector<int32_t> tokens = {7, 8, 9, 1, 1, 1, 1, 7, 8, 9};
  std::vector<int32_t> positions(batch * seq_len, -7);
  cpu::make_positions(tokens.data(), positions.data(), batch, seq_len, kFairseqPad);
  const int64_t rows = kFairseqPad + 1 + seq_len;
  const std::vector<float> table = make_table(rows, dim, kFairseqPad);
  std::vector<float> out(batch * seq_len * dim, kPoison);
  cpu::embedding_forward(positions.data(), table.data(), out.data(), batch * seq_len, dim, rows);
  ASSERT_EQ(test::count_non_finite(out), 0u);
  for (int64_t t = 0; t < batch * seq_len; ++t) {
    if (tokens[t] != kFairseqPad) continue;
    for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(out[t * dim + c], 0.0f) << t;
  }
  for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(out[0 * dim + c], out[7 * dim + c]) << c;  // both position 2
  EXPECT_NE(out[0], out[1 * dim]);
}

}  // namespace
}  // namespace sb
