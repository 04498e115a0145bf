// sb::cpu::bias_add_forward and bias_backward (src/cpu/bias.h): the broadcast add against a double formula,
// the column sums against a double formula (overwriting stale values), and the bias gradient by finite
// differences. Run: build/tests/unit_tests --gtest_filter='CpuBias*'
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/bias.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// The add is one fp32 rounding of an exact sum: half an ulp (2^-24 relative) below this.
constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-6;
constexpr double kGradientTolerance = 1e-2;  // finite differences, eps 1e-3, fp32 outputs

struct Shape {
  int64_t rows, cols;
};
constexpr Shape kShapes[] = {{1, 1}, {1, 9}, {7, 1}, {5, 3}, {33, 17}, {128, 64}};

TEST(CpuBias, AddForwardMatchesDoubleFormula) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    const auto x_in = test::random_normal(s.rows * s.cols, ++seed);
    const auto bias = test::random_normal(s.cols, ++seed);
    std::vector<float> x = x_in;
    cpu::bias_add_forward(x.data(), bias.data(), s.rows, s.cols);
    std::vector<double> ref;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t j = 0; j < s.cols; ++j) ref.push_back(double(x_in[r * s.cols + j]) + bias[j]);
    const auto cmp = test::compare_close(x, ref, kFloat32Atol, kFloat32Rtol);
    EXPECT_TRUE(cmp.ok()) << s.rows << "x" << s.cols << ": " << cmp.description;
    EXPECT_GT(test::l2_norm(bias), 0.0);
    EXPECT_GT(test::l2_norm(x), 0.0);
  }
}

TEST(CpuBias, BackwardIsColumnSumsAndOverwrites) {
  uint32_t seed = 50;
  for (const Shape& s : kShapes) {
    const auto dy = test::random_normal(s.rows * s.cols, ++seed);
    std::vector<float> dbias = test::poisoned(s.cols);  // stale contents must not be accumulated into
    cpu::bias_backward(dy.data(), dbias.data(), s.rows, s.cols);
    std::vector<double> ref(s.cols, 0.0);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t j = 0; j < s.cols; ++j) ref[j] += dy[r * s.cols + j];
    EXPECT_EQ(test::count_unwritten(dbias), 0u);
    // Both sum in double: they differ by the final rounding only.
    const auto cmp = test::compare_close(dbias, ref, kFloat32Atol, kFloat32Rtol);
    EXPECT_TRUE(cmp.ok()) << s.rows << "x" << s.cols << ": " << cmp.description;
    EXPECT_GT(test::l2_norm(dy), 0.0);
    EXPECT_GT(test::l2_norm(dbias), 0.0);
  }
}

// A long column whose fp32 running sum would drift: 2^24 + 1 + 1 + ... The double accumulator keeps the ones.
TEST(CpuBias, BackwardAccumulatesInDouble) {
  const int64_t rows = 1001;
  std::vector<float> dy(rows, 1.0f);
  dy[0] = 16777216.0f;  // 2^24: in fp32, 2^24 + 1 rounds back to 2^24
  float dbias = -1.0f;
  cpu::bias_backward(dy.data(), &dbias, rows, 1);
  EXPECT_EQ(dbias, 16777216.0f + 1000.0f);
}

TEST(CpuBias, GradientMatchesFiniteDifferences) {
  const int64_t rows = 6, cols = 5;
  const auto x = test::random_normal(rows * cols, 90);
  auto bias = test::random_normal(cols, 91);
  const auto w = test::random_normal(rows * cols, 92);  // dy of the projection loss
  auto loss = [&] {
    std::vector<float> y = x;
    cpu::bias_add_forward(y.data(), bias.data(), rows, cols);
    return test::project(y, w);
  };
  std::vector<float> dbias = test::poisoned(cols);
  cpu::bias_backward(w.data(), dbias.data(), rows, cols);
  const auto g = test::compare_with_finite_differences(bias, loss, dbias);
  EXPECT_LE(g.relative_error, kGradientTolerance) << g.describe();
  EXPECT_GT(g.analytic_norm, 0.0);
}

TEST(CpuBias, RejectsNegativeSizes) {
  float v = 0;
  EXPECT_THROW(cpu::bias_add_forward(&v, &v, -1, 1), UsageError);
  EXPECT_THROW(cpu::bias_backward(&v, &v, 1, -1), UsageError);
}

}  // namespace
}  // namespace sb
