// Philox-4x32-10 (include/scalebench/philox.h) against Random123's published known-answer vectors
// (kat_vectors, "philox4x32 10" lines), the counter/key word layout, and the exactness and range of
// uniform_from_bits. Run: build/tests/unit_tests --gtest_filter='Philox*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "scalebench/philox.h"

namespace sb {
namespace {

struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

// Random123 tests/kat_vectors: counter words, key words, output words (Salmon et al., SC'11). The third
// input is the hexadecimal expansion of pi.
const KnownAnswer kKnownAnswers[] = {
    {{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}},
     {{0x00000000u, 0x00000000u}},
     {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
    {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
     {{0xffffffffu, 0xffffffffu}},
     {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
    {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
     {{0xa4093822u, 0x299f31d0u}},
     {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
};

TEST(Philox, MatchesRandom123KnownAnswers) {
  for (const KnownAnswer& kat : kKnownAnswers) {
    const PhiloxCounter got = philox4x32(kat.counter, kat.key);
    for (int w = 0; w < 4; ++w) {
      EXPECT_EQ(got.word[w], kat.expected.word[w])
          << "counter word 0 " << std::hex << kat.counter.word[0] << ", output word " << w;
    }
  }
}

// Low word first, as the known-answer vectors lay out counters and keys.
TEST(Philox, CounterAndKeyWordLayout) {
  const PhiloxCounter c = philox_counter(0x0000000100000002ull);
  EXPECT_EQ(c.word[0], 2u);
  EXPECT_EQ(c.word[1], 1u);
  EXPECT_EQ(c.word[2], 0u);
  EXPECT_EQ(c.word[3], 0u);
  const PhiloxKey k = philox_key(0xa4093822299f31d0ull);
  EXPECT_EQ(k.word[0], 0x299f31d0u);
  EXPECT_EQ(k.word[1], 0xa4093822u);
}

// Neighbouring counters and keys (one bit apart) give unrelated blocks: about half the 128 bits differ.
TEST(Philox, OneBitChangesAboutHalfTheOutput) {
  const PhiloxKey key = philox_key(42);
  for (uint64_t block = 0; block < 64; ++block) {
    const PhiloxCounter a = philox4x32(philox_counter(block), key);
    const PhiloxCounter b = philox4x32(philox_counter(block ^ 1), key);
    const PhiloxCounter c = philox4x32(philox_counter(block), philox_key(42 ^ (1ull << 40)));
    int flipped_counter = 0, flipped_key = 0;
    for (int w = 0; w < 4; ++w) {
      flipped_counter += __builtin_popcount(a.word[w] ^ b.word[w]);
      flipped_key += __builtin_popcount(a.word[w] ^ c.word[w]);
    }
    // 128 fair coin flips: mean 64, sd 5.7; 30..98 is 6 sd each way.
    EXPECT_GT(flipped_counter, 30);
    EXPECT_LT(flipped_counter, 98);
    EXPECT_GT(flipped_key, 30);
    EXPECT_LT(flipped_key, 98);
  }
}

TEST(Philox, UniformFromBitsIsExactAndBelowOne) {
  EXPECT_EQ(uniform_from_bits(0u), 0.0f);
  EXPECT_EQ(uniform_from_bits(0x80000000u), 0.5f);
  EXPECT_EQ(uniform_from_bits(0x000000ffu), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(uniform_from_bits(0x00000100u), std::ldexp(1.0f, -24));
  EXPECT_EQ(uniform_from_bits(0xffffffffu), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_LT(uniform_from_bits(0xffffffffu), 1.0f);
}

// The uniforms of 25,000 blocks (100,000 values): mean 1/2 and quartile counts within 5 standard errors.
TEST(Philox, UniformsAreUniform) {
  const int kBlocks = 25000;
  const PhiloxKey key = philox_key(0x5eed5eed5eedull);
  double sum = 0;
  int below_quarter = 0;
  for (int b = 0; b < kBlocks; ++b) {
    const PhiloxCounter bits = philox4x32(philox_counter(b), key);
    for (int w = 0; w < 4; ++w) {
      const float u = uniform_from_bits(bits.word[w]);
      ASSERT_GE(u, 0.0f);
      ASSERT_LT(u, 1.0f);
      sum += u;
      below_quarter += u < 0.25f ? 1 : 0;
    }
  }
  const double n = 4.0 * kBlocks;
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(below_quarter, 0.25 * n, 5 * std::sqrt(n * 0.25 * 0.75));
}

}  // namespace
}  // namespace sb
