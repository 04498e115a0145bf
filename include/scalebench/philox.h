// Philox-4x32-10, the counter-based generator of Salmon et al. (SC'11, "Parallel random numbers: as easy as
// 1, 2, 3"), as host/device inline functions: the CPU reference ops and the CUDA kernels draw the same bits
// from the same (key, counter), so dropout masks agree bit for bit across devices. Checked against
// Random123's known-answer vectors in tests/unit/test_philox.cpp.
#pragma once

#include <cstdint>

#include "scalebench/host_device.h"

namespace sb {

// 128-bit counter and 64-bit key as 32-bit words, word 0 least significant (Random123's order).
struct PhiloxCounter {
  uint32_t word[4];
};
struct PhiloxKey {
  uint32_t word[2];
};

// Round multipliers and Weyl key increments of the paper (M0, M1 chosen for avalanche; W0, W1 are the
// fractional parts of the golden ratio and of sqrt(3) - 1).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;  // the standard strength; 7 already pass BigCrush

namespace detail {

// One Philox S-box: two 32x32 -> 64-bit products, their halves mixed with the other words and the key.
SB_HOST_DEVICE inline PhiloxCounter philox_round(PhiloxCounter c, PhiloxKey k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c.word[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c.word[2];
  PhiloxCounter out;
  out.word[0] = static_cast<uint32_t>(p1 >> 32) ^ c.word[1] ^ k.word[0];
  out.word[1] = static_cast<uint32_t>(p1);
  out.word[2] = static_cast<uint32_t>(p0 >> 32) ^ c.word[3] ^ k.word[1];
  out.word[3] = static_cast<uint32_t>(p0);
  return out;
}

}  // namespace detail

// The 128 random bits of block `counter` under `key`: 10 rounds, the key bumped between rounds.
SB_HOST_DEVICE inline PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key.word[0] += kPhiloxW0;
      key.word[1] += kPhiloxW1;
    }
    counter = detail::philox_round(counter, key);
  }
  return counter;
}

// A 64-bit block index as a counter (low word first); words 2 and 3 are left 0 for callers that need a
// second stream dimension later.
SB_HOST_DEVICE inline PhiloxCounter philox_counter(uint64_t block) {
  return PhiloxCounter{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}};
}

// A 64-bit seed as a key (low word first).
SB_HOST_DEVICE inline PhiloxKey philox_key(uint64_t seed) {
  return PhiloxKey{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
}

// The top 24 bits as a float in [0, 1): a multiple of 2^-24, exact in fp32 on any device (no rounding
// step, so host and device agree bit for bit); the largest value is 1 - 2^-24.
SB_HOST_DEVICE inline float uniform_from_bits(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

}  // namespace sb
