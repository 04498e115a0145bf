// sb::cpu kernels of the ConvS2S ops: GLU (src/cpu/glu.h), weight normalisation (src/cpu/weight_norm.h) and the
// per-row scaling (src/cpu/scale_rows.h). Forward values against double formulas, backward against central
// finite differences of a random projection of the output, every output element written (NaN poison).
// Run: unit_tests --gtest_filter='CpuGlu*:CpuWeightNorm*:CpuScaleRows*'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/glu.h"
#include "src/cpu/scale_rows.h"
#include "src/cpu/weight_norm.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Kernels and formulas evaluate in double and round once to fp32; the formulas are written differently
// (tanh form of the sigmoid, norms recomputed), so the last double bits may differ.
constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-7;
// Central differences with eps 1e-3 of an fp32 loss: ~1e-4 noise per element; a wrong gradient is off by O(1).
constexpr double kGradientTolerance = 1e-2;

double sigmoid(double x) { return 0.5 * (1.0 + std::tanh(0.5 * x)); }

TEST(CpuGlu, ForwardIsTheFirstHalfGatedByTheSecond) {
  const int64_t rows = 5, cols = 7;
  const std::vector<float> x = test::random_normal(rows * 2 * cols, 11, 2.0f);
  std::vector<float> y = test::poisoned(rows * cols);
  cpu::glu_forward(x.data(), y.data(), rows, cols);
  std::vector<double> want(y.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = x[r * 2 * cols + c] * sigmoid(x[r * 2 * cols + cols + c]);
  }
  EXPECT_EQ(test::count_unwritten(y), 0u);
  EXPECT_GT(test::l2_norm(y), 0.0);
  const test::CloseComparison cmp = test::compare_close(y, want, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
}

TEST(CpuGlu, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, cols = 6;
  std::vector<float> x = test::random_normal(rows * 2 * cols, 12, 2.0f);
  const std::vector<float> w = test::random_normal(rows * cols, 13);  // the projection dL/dy
  std::vector<float> y(rows * cols), dx = test::poisoned(x.size());
  cpu::glu_backward(x.data(), w.data(), dx.data(), rows, cols);
  EXPECT_EQ(test::count_unwritten(dx), 0u);
  const test::GradientComparison cmp = test::compare_with_finite_differences(
      x,
      [&] {
        cpu::glu_forward(x.data(), y.data(), rows, cols);
        return test::project(y, w);
      },
      dx);
  EXPECT_GT(cmp.analytic_norm, 0.0);
  EXPECT_LE(cmp.relative_error, kGradientTolerance) << cmp.describe();
}

TEST(CpuGlu, RefusesNegativeSizes) {
  float x = 0, y = 0;
  EXPECT_THROW(cpu::glu_forward(&x, &y, -1, 1), UsageError);
  EXPECT_THROW(cpu::glu_backward(&x, &y, &x, 1, -1), UsageError);
}

// fairseq's ConvTBC rows (3 taps x 5 inputs) and an nn.Linear's (7 inputs), g of both signs.
TEST(CpuWeightNorm, EveryRowHasNormAbsGAndTheDirectionOfV) {
  for (int64_t cols : {15, 7}) {
    const int64_t rows = 6;
    const std::vector<float> v = test::random_normal(rows * cols, 21), g = test::random_normal(rows, 22);
    std::vector<float> w = test::poisoned(rows * cols), norms = test::poisoned(rows);
    cpu::weight_norm_forward(v.data(), g.data(), w.data(), norms.data(), rows, cols);
    EXPECT_EQ(test::count_unwritten(w) + test::count_unwritten(norms), 0u);
    std::vector<double> want(w.size());
    for (int64_t r = 0; r < rows; ++r) {
      double squares = 0, w_squares = 0;
      for (int64_t c = 0; c < cols; ++c) squares += double(v[r * cols + c]) * v[r * cols + c];
      for (int64_t c = 0; c < cols; ++c) {
        want[r * cols + c] = g[r] * v[r * cols + c] / std::sqrt(squares);
        w_squares += double(w[r * cols + c]) * w[r * cols + c];
      }
      EXPECT_NEAR(norms[r], std::sqrt(squares), 1e-6 * std::sqrt(squares));
      EXPECT_NEAR(std::sqrt(w_squares), std::fabs(g[r]), 1e-6) << "row " << r;
    }
    const test::CloseComparison cmp = test::compare_close(w, want, kFloat32Atol, kFloat32Rtol);
    EXPECT_TRUE(cmp.ok()) << cmp.description;
  }
}

TEST(CpuWeightNorm, BackwardMatchesFiniteDifferencesForVAndG) {
  const int64_t rows = 5, cols = 9;
  std::vector<float> v = test::random_normal(rows * cols, 31), g = test::random_normal(rows, 32);
  const std::vector<float> dw = test::random_normal(rows * cols, 33);  // the projection dL/dw
  std::vector<float> w(rows * cols), norms(rows);
  cpu::weight_norm_forward(v.data(), g.data(), w.data(), norms.data(), rows, cols);
  std::vector<float> dv = test::poisoned(v.size()), dg = test::poisoned(g.size());
  cpu::weight_norm_backward(dw.data(), v.data(), g.data(), norms.data(), dv.data(), dg.data(), rows, cols);
  EXPECT_EQ(test::count_unwritten(dv) + test::count_unwritten(dg), 0u);
  auto loss = [&] {
    cpu::weight_norm_forward(v.data(), g.data(), w.data(), norms.data(), rows, cols);
    return test::project(w, dw);
  };
  const test::GradientComparison for_v = test::compare_with_finite_differences(v, loss, dv);
  const test::GradientComparison for_g = test::compare_with_finite_differences(g, loss, dg);
  EXPECT_GT(for_v.analytic_norm, 0.0);
  EXPECT_GT(for_g.analytic_norm, 0.0);
  EXPECT_LE(for_v.relative_error, kGradientTolerance) << "v: " << for_v.describe();
  EXPECT_LE(for_g.relative_error, kGradientTolerance) << "g: " << for_g.describe();
  // The normalised weight does not change along v (w is scale-invariant in v): dv is orthogonal to v.
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0, scale = 0;
    for (int64_t c = 0; c < cols; ++c) {
      dot += double(dv[r * cols + c]) * v[r * cols + c];
      scale += std::fabs(double(dv[r * cols + c]) * v[r * cols + c]);
    }
    EXPECT_LE(std::fabs(dot), 1e-5 * scale) << "row " << r;
  }
}

TEST(CpuScaleRows, ScalesEachRowByItsFactorInPlaceToo) {
  const int64_t rows = 4, cols = 5;
  const std::vector<float> x = test::random_normal(rows * cols, 41);
  const std::vector<float> factors{0.0f, 1.0f, 2.5f, -0.75f};  // a mask's 0 and 1, a length scaling, a sign
  std::vector<float> y = test::poisoned(x.size());
  cpu::scale_rows_forward(x.data(), factors.data(), y.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(y[r * cols + c], factors[r] * x[r * cols + c]) << r << ", " << c;
  }
  std::vector<float> in_place = x;
  cpu::scale_rows_forward(in_place.data(), factors.data(), in_place.data(), rows, cols);
  EXPECT_EQ(in_place, y);
  EXPECT_THROW(cpu::scale_rows_forward(x.data(), factors.data(), y.data(), -1, cols), UsageError);
}

}  // namespace
}  // namespace sb
