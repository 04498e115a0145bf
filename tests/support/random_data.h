// Fresh random test data (STYLE.md rule 4: never zeros): normal and uniform floats and integer ids from a
// seeded generator, so a failure reproduces.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace sb::test {

inline std::vector<float> random_normal(size_t count, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> distribution(0.0f, stddev);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(generator);
  return values;
}

inline std::vector<float> random_uniform(size_t count, uint32_t seed, float low, float high) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(generator);
  return values;
}

inline std::vector<int32_t> random_ids(size_t count, uint32_t seed, int32_t low, int32_t high_inclusive) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int32_t> distribution(low, high_inclusive);
  std::vector<int32_t> values(count);
  for (int32_t& v : values) v = distribution(generator);
  return values;
}

}  // namespace sb::test
