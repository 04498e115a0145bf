// Philox uniforms on the CPU (src/cpu/random_uniform.h).
#include "src/cpu/random_uniform.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/philox.h"

namespace sb::cpu {

void philox_uniform(float* values, int64_t n, uint64_t seed, uint64_t offset) {
  SB_CHECK(n >= 0, "philox_uniform: negative count " + std::to_string(n));
  const PhiloxKey key = philox_key(seed);
  for (int64_t first = 0; first < n; first += 4) {
    const PhiloxCounter bits = philox4x32(philox_counter(offset + static_cast<uint64_t>(first / 4)), key);
    for (int64_t lane = 0; lane < 4 && first + lane < n; ++lane) {
      values[first + lane] = uniform_from_bits(bits.word[lane]);
    }
  }
}

}  // namespace sb::cpu
