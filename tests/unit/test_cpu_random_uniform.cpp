// sb::cpu::philox_uniform: the same numbers dropout draws (an element is kept exactly when its uniform is
// >= p), each a multiple of 2^-24 in [0, 1), spread over the interval, and a node's block range is its own.
// Run: unit_tests --gtest_filter='CpuRandomUniform*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/cpu/dropout.h"
#include "src/cpu/random_uniform.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

TEST(CpuRandomUniform, DrawsDropoutsNumbers) {
  const int64_t n = 1001;  // not a multiple of 4: the last block is partial
  const uint64_t seed = 12345, offset = 77;
  std::vector<float> u = test::poisoned(n);
  cpu::philox_uniform(u.data(), n, seed, offset);
  EXPECT_EQ(test::count_unwritten(u), 0u);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const std::vector<float> x = test::random_normal(n, 3);
    std::vector<float> y(n);
    std::vector<uint8_t> mask(n);
    cpu::dropout_forward(x.data(), y.data(), mask.data(), n, p, seed, offset);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(mask[i] != 0, u[i] >= p) << "element " << i << " p " << p;
  }
  double sum = 0;
  for (float v : u) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_EQ(v * 16777216.0f, std::floor(v * 16777216.0f)) << "a multiple of 2^-24";
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.05);
  // Starting one block later shifts the sequence by four values.
  std::vector<float> later(n - 4);
  cpu::philox_uniform(later.data(), n - 4, seed, offset + 1);
  EXPECT_EQ(later, std::vector<float>(u.begin() + 4, u.end()));
}

}  // namespace
}  // namespace sb
