// sb::cpu casts between fp32 and bf16/fp16 bits (src/cpu/cast.h): every 16-bit pattern survives the round
// trip through fp32, round-to-nearest-even at ties, the relative rounding error within half an ulp, and every
// output element written. The scalar rules are tested exhaustively in test_half_precision.cpp.
// Run: build/tests/unit_tests --gtest_filter='CpuCast*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cast.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

constexpr uint16_t kBitsPoison = 0xFFFF;  // a NaN pattern in both formats; finite inputs never produce it
// Half an ulp relative to the value: 2^-8 for bf16 (8 significant bits), 2^-11 for fp16 (11 bits).
const double kBf16HalfUlp = std::ldexp(1.0, -8);
const double kFp16HalfUlp = std::ldexp(1.0, -11);
constexpr double kFp16MinNormal = 6.103515625e-05;  // 2^-14; below it fp16 is subnormal (absolute error)
constexpr double kFp16MaxFinite = 65504.0;

using Narrow = void (*)(const float*, uint16_t*, int64_t);
using Widen = void (*)(const uint16_t*, float*, int64_t);

bool is_nan_bits(uint16_t bits, bool bf16) {
  return bf16 ? ((bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0)
              : ((bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0);
}

// bits -> float is exact, so float -> bits must give the pattern back (NaNs stay NaN; a signalling NaN
// becomes quiet, as on the GPU).
void check_round_trip(Narrow narrow, Widen widen, bool bf16) {
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<float> wide = test::poisoned(all.size());
  std::vector<uint16_t> back(all.size(), kBitsPoison);
  widen(all.data(), wide.data(), 65536);
  narrow(wide.data(), back.data(), 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    if (is_nan_bits(all[b], bf16)) {
      ASSERT_TRUE(std::isnan(wide[b])) << std::hex << b;
      ASSERT_TRUE(is_nan_bits(back[b], bf16)) << std::hex << b;
    } else {
      ASSERT_EQ(back[b], all[b]) << std::hex << b;
    }
  }
}

TEST(CpuCast, Bf16RoundTripOfEveryPattern) {
  check_round_trip(cpu::cast_float_to_bf16, cpu::cast_bf16_to_float, true);
}

TEST(CpuCast, Fp16RoundTripOfEveryPattern) {
  check_round_trip(cpu::cast_float_to_fp16, cpu::cast_fp16_to_float, false);
}

// Midpoints between neighbours go to the even one; just above a midpoint goes up.
TEST(CpuCast, TiesRoundToEven) {
  const std::vector<float> x = {1.0f + std::ldexp(1.0f, -8), 1.0f + std::ldexp(3.0f, -8),
                                1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20),
                                1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11)};
  std::vector<uint16_t> bf(x.size(), kBitsPoison), fp(x.size(), kBitsPoison);
  cpu::cast_float_to_bf16(x.data(), bf.data(), x.size());
  cpu::cast_float_to_fp16(x.data(), fp.data(), x.size());
  EXPECT_EQ(bf[0], 0x3F80);  // 1 + 2^-8: tie between 1 (even) and 1 + 2^-7
  EXPECT_EQ(bf[1], 0x3F82);  // 1 + 3 * 2^-8: tie between 0x3F81 (odd) and 0x3F82
  EXPECT_EQ(bf[2], 0x3F81);  // just above the tie
  EXPECT_EQ(fp[3], 0x3C00);  // 1 + 2^-11: fp16 tie to 1
  EXPECT_EQ(fp[4], 0x3C02);
}

// Random values over many binades: the narrowed value is within half an ulp of the input, and the output
// arrays are fully written.
TEST(CpuCast, RoundingErrorWithinHalfAnUlp) {
  const size_t n = 4099;
  auto x = test::random_normal(n, 12);
  const auto exponents = test::random_ids(n, 13, -20, 15);
  for (size_t i = 0; i < n; ++i) x[i] = std::ldexp(x[i], exponents[i]);
  std::vector<uint16_t> bf(n, kBitsPoison), fp(n, kBitsPoison);
  std::vector<float> bf_wide = test::poisoned(n), fp_wide = test::poisoned(n);
  cpu::cast_float_to_bf16(x.data(), bf.data(), n);
  cpu::cast_float_to_fp16(x.data(), fp.data(), n);
  cpu::cast_bf16_to_float(bf.data(), bf_wide.data(), n);
  cpu::cast_fp16_to_float(fp.data(), fp_wide.data(), n);
  EXPECT_EQ(test::count_unwritten(bf_wide), 0u);
  EXPECT_EQ(test::count_unwritten(fp_wide), 0u);
  size_t fp16_checked = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    ASSERT_LE(std::fabs(bf_wide[i] - v), kBf16HalfUlp * std::fabs(v)) << v;
    if (std::fabs(v) >= kFp16MinNormal && std::fabs(v) <= kFp16MaxFinite) {
      ASSERT_LE(std::fabs(fp_wide[i] - v), kFp16HalfUlp * std::fabs(v)) << v;
      ++fp16_checked;
    } else if (std::fabs(v) > 65520.0) {
      ASSERT_TRUE(std::isinf(fp_wide[i])) << v;  // beyond the rounding range of the largest finite
    }
  }
  EXPECT_GT(fp16_checked, n / 2);
  EXPECT_GT(test::l2_norm(x), 0.0);
  EXPECT_GT(test::l2_norm(bf_wide), 0.0);
  EXPECT_GT(test::l2_norm(fp_wide), 0.0);
}

TEST(CpuCast, RejectsNegativeCounts) {
  float f = 0;
  uint16_t h = 0;
  EXPECT_THROW(cpu::cast_float_to_bf16(&f, &h, -1), UsageError);
  EXPECT_THROW(cpu::cast_fp16_to_float(&h, &f, -1), UsageError);
}

}  // namespace
}  // namespace sb
