// bf16/fp16 host conversions (src/core/half_precision.cpp): known bit patterns, every rounding boundary
// (each midpoint between neighbours must round to the even one, and its float neighbours away from it),
// exhaustive round trips, and, where the compiler has _Float16, a sweep against its conversions.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "scalebench/half_precision.h"

namespace sb {
namespace {

float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

bool fp16_is_nan(uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0; }
bool bf16_is_nan(uint16_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0; }

TEST(HalfPrecision, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16_bits(-2.5f), 0xC100);
  EXPECT_EQ(float_to_fp16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_fp16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16_bits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(float_to_fp16_bits(65519.0f), 0x7BFF);  // below the midpoint to 2^16
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7C00);  // the midpoint: ties to even, which is inf
  EXPECT_EQ(float_to_fp16_bits(1e10f), 0x7C00);
  EXPECT_EQ(float_to_fp16_bits(-FLT_MAX), 0xFC00);
  EXPECT_EQ(float_to_fp16_bits(INFINITY), 0x7C00);
  EXPECT_EQ(float_to_fp16_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16_bits(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // half of it: ties to even, zero
  EXPECT_EQ(float_to_fp16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 subnormal ulps: to even
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1023.5f, -24)), 0x0400);  // largest subnormal rounds up to normal
  EXPECT_EQ(float_to_fp16_bits(1e-10f), 0x0000);
  EXPECT_EQ(float_to_fp16_bits(-1e-10f), 0x8000);
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, 1.0 is even
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie, 0x3C01 is odd
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(float_to_fp16_bits(2049.0f), 0x6800);  // ulp 2 above 2048: tie to 2048
  EXPECT_EQ(float_to_fp16_bits(2051.0f), 0x6802);  // tie to 2052
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(NAN)));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(-NAN)));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16_bits(float_from_bits(0x7F800001))));  // signalling, low payload
}

TEST(HalfPrecision, Fp16ToFloatKnownValues) {
  EXPECT_EQ(fp16_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(fp16_bits_to_float(0xC100), -2.5f);
  EXPECT_EQ(fp16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_bits_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_bits_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp16_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_bits_to_float(0x7C00), INFINITY);
  EXPECT_EQ(fp16_bits_to_float(0xFC00), -INFINITY);
  EXPECT_TRUE(std::signbit(fp16_bits_to_float(0x8000)));
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0x7C01)));
}

TEST(HalfPrecision, Bf16KnownValues) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-2.5f), 0xC020);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie, 1.0 is even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3F82);  // tie, 0x3F81 is odd
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(3.0f, -9)), 0x3F81);  // 0.75 ulp: up
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -23)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(256.0f), 0x4380);
  EXPECT_EQ(float_to_bf16_bits(257.0f), 0x4380);   // ulp 2 above 256: tie to 256
  EXPECT_EQ(float_to_bf16_bits(259.0f), 0x4382);   // tie to 260
  EXPECT_EQ(float_to_bf16_bits(FLT_MAX), 0x7F80);  // above the midpoint past the largest finite: inf
  EXPECT_EQ(float_to_bf16_bits(bf16_bits_to_float(0x7F7F)), 0x7F7F);
  EXPECT_EQ(float_to_bf16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-INFINITY), 0xFF80);
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x00000001)), 0x0000);  // smallest float subnormal
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x00010000)), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(float_to_bf16_bits(float_from_bits(0x00018000)), 0x0002);  // tie, 0x0001 is odd
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(NAN)));
  // A NaN whose payload sits only in the low 16 bits must not truncate to inf.
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_from_bits(0x7F800001))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_from_bits(0xFF800001))));
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(0xC020), -2.5f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0x7FC0)));
}

// Every non-NaN 16-bit pattern survives widening and narrowing unchanged; every NaN stays a NaN.
TEST(HalfPrecision, ExhaustiveRoundTrip) {
  int fp16_wrong = 0;
  int bf16_wrong = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const uint16_t fp16_back = float_to_fp16_bits(fp16_bits_to_float(b));
    const bool fp16_ok = fp16_is_nan(b) ? fp16_is_nan(fp16_back) : fp16_back == b;
    if (!fp16_ok && ++fp16_wrong <= 5)
      ADD_FAILURE() << std::hex << "fp16 0x" << bits << " -> 0x" << fp16_back;
    const uint16_t bf16_back = float_to_bf16_bits(bf16_bits_to_float(b));
    const bool bf16_ok = bf16_is_nan(b) ? bf16_is_nan(bf16_back) : bf16_back == b;
    if (!bf16_ok && ++bf16_wrong <= 5)
      ADD_FAILURE() << std::hex << "bf16 0x" << bits << " -> 0x" << bf16_back;
  }
  EXPECT_EQ(fp16_wrong, 0);
  EXPECT_EQ(bf16_wrong, 0);
}

// For each pair of neighbouring finite values (and the largest finite with the next power of two, which
// stands for inf), the exact midpoint rounds to the neighbour with an even last bit, and the floats just
// beside the midpoint round to the nearer neighbour. Both signs. This pins round-to-nearest-even at every
// boundary, subnormals and overflow included.
TEST(HalfPrecision, Fp16EveryMidpoint) {
  int wrong = 0;
  for (uint32_t low = 0; low <= 0x7BFF; ++low) {
    const uint32_t high = low + 1;  // 0x7C00 is inf, reached from 65504 through 65520
    const float low_value = fp16_bits_to_float(static_cast<uint16_t>(low));
    const float high_value = high == 0x7C00 ? 65536.0f : fp16_bits_to_float(static_cast<uint16_t>(high));
    const float middle = (low_value + high_value) / 2;  // exact: 11 significant bits need only 12
    const uint32_t even = (low & 1) == 0 ? low : high;
    const struct {
      float value;
      uint32_t expected;
    } probes[] = {
        {middle, even}, {std::nextafter(middle, INFINITY), high}, {std::nextafter(middle, 0.0f), low}};
    for (const auto& probe : probes) {
      const uint16_t positive = float_to_fp16_bits(probe.value);
      const uint16_t negative = float_to_fp16_bits(-probe.value);
      if ((positive != probe.expected || negative != (probe.expected | 0x8000)) && ++wrong <= 5) {
        ADD_FAILURE() << std::hex << "fp16 near midpoint of 0x" << low << ": " << probe.value << " -> 0x"
                      << positive << " / -0x" << negative << ", expected 0x" << probe.expected;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

// bf16 is the top half of a float, so the midpoint between neighbours is the float with bits
// (low << 16) | 0x8000, and its float neighbours are one bit either side.
TEST(HalfPrecision, Bf16EveryMidpoint) {
  int wrong = 0;
  for (uint32_t low = 0; low <= 0x7F7F; ++low) {
    const uint32_t high = low + 1;  // 0x7F80 is inf
    const uint32_t middle = (low << 16) | 0x8000;
    const uint32_t even = (low & 1) == 0 ? low : high;
    const uint32_t probes[][2] = {{middle, even}, {middle + 1, high}, {middle - 1, low}};
    for (const auto& probe : probes) {
      const uint16_t positive = float_to_bf16_bits(float_from_bits(probe[0]));
      const uint16_t negative = float_to_bf16_bits(float_from_bits(probe[0] | 0x80000000u));
      if ((positive != probe[1] || negative != (probe[1] | 0x8000)) && ++wrong <= 5) {
        ADD_FAILURE() << std::hex << "bf16 of float 0x" << probe[0] << " -> 0x" << positive << " / 0x"
                      << negative << ", expected 0x" << probe[1];
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

#if defined(__FLT16_MAX__)
// The compiler's own IEEE conversions as an independent reference: every fp16 pattern widened, and a
// strided sweep over all 2^32 float patterns narrowed (the stride is odd, so every exponent and many
// mantissa tails are visited).
TEST(HalfPrecision, MatchesCompilerFloat16) {
  int wrong = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    _Float16 reference;
    std::memcpy(&reference, &b, sizeof reference);
    const float expected = static_cast<float>(reference);
    const float got = fp16_bits_to_float(b);
    const bool same = std::isnan(expected) ? std::isnan(got) : std::memcmp(&got, &expected, sizeof got) == 0;
    if (!same && ++wrong <= 5) ADD_FAILURE() << std::hex << "widening fp16 0x" << bits << ": " << got;
  }
  constexpr uint64_t kStride = 4099;  // ~1M probes
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += kStride) {
    const float value = float_from_bits(static_cast<uint32_t>(bits));
    const _Float16 reference = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof expected);
    const uint16_t got = float_to_fp16_bits(value);
    const bool same = std::isnan(value) ? fp16_is_nan(got) : got == expected;
    if (!same && ++wrong <= 10) {
      ADD_FAILURE() << std::hex << "narrowing float 0x" << bits << ": 0x" << got << ", compiler 0x"
                    << expected;
    }
  }
  EXPECT_EQ(wrong, 0);
}
#endif

}  // namespace
}  // namespace sb
