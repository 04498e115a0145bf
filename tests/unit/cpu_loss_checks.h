// Checks shared by the loss/head kernel tests (test_cpu_cross_entropy, test_cpu_span_loss, test_cpu_san*):
// NaN poisoning, "every element written", norms and an element-wise |got - ref| <= atol + rtol |ref| that
// prints the worst element (STYLE.md rules 3-4). Random data and finite differences come from tests/support.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/gradient_check.h"

namespace sb::test {

// fp32 kernels with fp64 accumulation against a double reference on O(1)-O(100) data: the result is one fp32
// rounding of the exact value (relative 6e-8), so 1e-5 relative leaves room for the float inputs of
// transcendental functions without hiding a wrong term.
constexpr double kFp32Rtol = 1e-5;
constexpr double kFp32Atol = 1e-6;
// Finite differences with eps 1e-3 on fp32 kernels (the brief's bound, tests/support/gradient_check.h).
constexpr double kGradientEps = 1e-3;
constexpr double kGradientRelativeError = 1e-2;

template <typename T>
std::vector<T> poisoned(size_t count) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    return std::vector<T>(count, std::numeric_limits<T>::quiet_NaN());
  } else {
    return std::vector<T>(count, std::numeric_limits<T>::min());
  }
}

inline double l2_norm(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum);
}

// Every element was overwritten (no NaN poison left) and is finite.
inline void expect_all_written(const std::vector<float>& values, const std::string& name) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      ADD_FAILURE() << name << "[" << i << "] = " << values[i] << " (not written or not finite)";
      return;
    }
  }
}

inline void expect_close(const std::vector<float>& got, const std::vector<double>& ref, const std::string& name,
                         double atol = kFp32Atol, double rtol = kFp32Rtol) {
  ASSERT_EQ(got.size(), ref.size()) << name;
  size_t worst = 0, failures = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::fabs(got[i] - ref[i]) - (atol + rtol * std::fabs(ref[i]));
    if (!(excess <= 0)) ++failures;
    if (!(excess <= worst_excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  EXPECT_EQ(failures, 0u) << name << ": worst element " << worst << " got " << got[worst] << " ref "
                          << ref[worst] << " (" << failures << " of " << got.size() << " outside "
                          << atol << " + " << rtol << " |ref|)";
}

// Finite differences of L = project(output(), projection) with respect to `input` (which output() reads)
// against `analytic`, the kernel's gradient for an upstream gradient equal to `projection`.
inline void expect_gradient(std::vector<float>& input, const std::function<std::vector<float>()>& output,
                            const std::vector<float>& projection, const std::vector<float>& analytic,
                            const std::string& name) {
  const auto loss = [&] { return project(output(), projection); };
  const GradientComparison cmp = compare_with_finite_differences(input, loss, analytic, kGradientEps);
  EXPECT_LE(cmp.relative_error, kGradientRelativeError) << name << ": " << cmp.describe();
  EXPECT_GT(cmp.analytic_norm, 0.0) << name << ": the analytic gradient is all zeros";
}

}  // namespace sb::test
