// sb::cpu elementwise ops (src/cpu/activations.h): GELU (erf and tanh forms), ReLU, tanh, add and scale
// against double formulas and published values, backward against the closed-form derivative and finite
// differences, in-place calls, and every output element written. Run: --gtest_filter='CpuActivations*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/activations.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Kernel and formula both evaluate in double and round once to fp32 (2^-24 relative); the formulas below
// are written differently (erfc instead of erf, say), so the last double bits may differ.
constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-7;
constexpr double kGradientTolerance = 1e-2;  // finite differences, eps 1e-3, fp32 outputs
// max |gelu_tanh(x) - gelu(x)| over [-8, 8] is 4.73e-4 (evaluated in double at step 1e-3).
constexpr double kGeluApproximationGap = 5e-4;
const int64_t kSizes[] = {1, 7, 1000};
constexpr double kPi = 3.14159265358979323846;

using Forward = std::function<void(const float*, float*, int64_t)>;
using Backward = std::function<void(const float*, const float*, float*, int64_t)>;

struct Activation {
  std::string name;
  Forward forward;
  Backward backward;
  bool backward_reads_output;           // relu, tanh: the saved tensor is y; gelus: x
  std::function<double(double)> value;  // f(x)
  std::function<double(double)> slope;  // f'(x), as a function of the saved tensor (x or y)
};

double phi_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

std::vector<Activation> activations() {
  const double c = std::sqrt(2.0 / kPi);
  auto tanh_arg = [c](double x) { return c * (x + 0.044715 * x * x * x); };
  return {
      {"gelu", cpu::gelu_forward, cpu::gelu_backward, false, [](double x) { return x * phi_cdf(x); },
       [](double x) { return phi_cdf(x) + x * std::exp(-x * x / 2) / std::sqrt(2 * kPi); }},
      {"gelu_tanh", cpu::gelu_tanh_forward, cpu::gelu_tanh_backward, false,
       [=](double x) { return 0.5 * x * (1 + std::tanh(tanh_arg(x))); },
       [=](double x) {
         const double t = std::tanh(tanh_arg(x));
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
       }},
      {"relu", cpu::relu_forward, cpu::relu_backward, true, [](double x) { return x > 0 ? x : 0.0; },
       [](double y) { return y > 0 ? 1.0 : 0.0; }},
      {"tanh", cpu::tanh_forward, cpu::tanh_backward, true, [](double x) { return std::tanh(x); },
       [](double y) { return 1 - y * y; }},  // from the rounded y, as the kernel: 1 - y^2 loses digits near |y| = 1
  };
}

// Normal values scaled to cover the curved parts, moved at least 0.05 away from 0 (ReLU's kink, which
// central differences with eps 1e-3 must not straddle).
std::vector<float> test_inputs(size_t n, uint32_t seed) {
  auto x = test::random_normal(n, seed, 2.0f);
  for (float& v : x) v = std::copysign(0.05f + std::fabs(v), v);
  return x;
}

TEST(CpuActivations, ForwardAndBackwardMatchDoubleFormulas) {
  uint32_t seed = 10;
  for (const Activation& act : activations()) {
    for (int64_t n : kSizes) {
      const auto x = test_inputs(n, ++seed);
      const auto dy = test::random_normal(n, ++seed);
      std::vector<float> y = test::poisoned(n), dx = test::poisoned(n);
      act.forward(x.data(), y.data(), n);
      act.backward(act.backward_reads_output ? y.data() : x.data(), dy.data(), dx.data(), n);
      std::vector<double> y_ref, dx_ref;
      for (int64_t i = 0; i < n; ++i) {
        y_ref.push_back(act.value(x[i]));
        dx_ref.push_back(dy[i] * act.slope(act.backward_reads_output ? y[i] : x[i]));
      }
      const auto fwd = test::compare_close(y, y_ref, kFloat32Atol, kFloat32Rtol);
      const auto bwd = test::compare_close(dx, dx_ref, kFloat32Atol, kFloat32Rtol);
      EXPECT_TRUE(fwd.ok()) << act.name << " forward n=" << n << ": " << fwd.description;
      EXPECT_TRUE(bwd.ok()) << act.name << " backward n=" << n << ": " << bwd.description;
      EXPECT_GT(test::l2_norm(x), 0.0);
      EXPECT_GT(test::l2_norm(dy), 0.0);
      if (n > 1) {  // one element may be a dropped ReLU input
        EXPECT_GT(test::l2_norm(y), 0.0) << act.name;
        EXPECT_GT(test::l2_norm(dx), 0.0) << act.name;
      }
    }
  }
}

// GELU(1) = Phi(1), GELU(-1) = -Phi(-1) (standard normal table values); the tanh form stays within its known
// distance of the erf form.
TEST(CpuActivations, GeluPublishedValues) {
  const std::vector<float> x = {-1.0f, 0.0f, 1.0f, 2.5f};
  std::vector<float> y = test::poisoned(4), y_tanh = test::poisoned(4);
  cpu::gelu_forward(x.data(), y.data(), 4);
  cpu::gelu_tanh_forward(x.data(), y_tanh.data(), 4);
  const std::vector<double> exact = {-0.15865525393145707, 0.0, 0.8413447460685429, 2.4844758366855597};
  const auto cmp = test::compare_close(y, exact, kFloat32Atol, kFloat32Rtol);
  EXPECT_TRUE(cmp.ok()) << cmp.description;
  EXPECT_EQ(y_tanh[1], 0.0f);
  EXPECT_NEAR(y_tanh[2], 0.8411919906082768, 1e-7);  // PyTorch gelu(1, approximate='tanh'): 0.841192

  const auto wide = test::random_uniform(2000, 3, -8.0f, 8.0f);
  std::vector<float> a = test::poisoned(wide.size()), b = test::poisoned(wide.size());
  cpu::gelu_forward(wide.data(), a.data(), wide.size());
  cpu::gelu_tanh_forward(wide.data(), b.data(), wide.size());
  for (size_t i = 0; i < wide.size(); ++i) ASSERT_NEAR(a[i], b[i], kGeluApproximationGap) << wide[i];
}

TEST(CpuActivations, GradientsMatchFiniteDifferences) {
  const int64_t n = 40;
  uint32_t seed = 200;
  for (const Activation& act : activations()) {
    auto x = test_inputs(n, ++seed);
    const auto w = test::random_normal(n, ++seed);
    auto loss = [&] {
      std::vector<float> y = test::poisoned(n);
      act.forward(x.data(), y.data(), n);
      return test::project(y, w);
    };
    std::vector<float> y = test::poisoned(n), dx = test::poisoned(n);
    act.forward(x.data(), y.data(), n);
    act.backward(act.backward_reads_output ? y.data() : x.data(), w.data(), dx.data(), n);
    ASSERT_EQ(test::count_unwritten(dx), 0u) << act.name;
    const auto g = test::compare_with_finite_differences(x, loss, dx);
    EXPECT_LE(g.relative_error, kGradientTolerance) << act.name << ": " << g.describe();
    EXPECT_GT(g.analytic_norm, 0.0) << act.name;
  }
}

// The engine may reuse a buffer: y == x and dx == dy give the same bits as separate arrays.
TEST(CpuActivations, InPlaceCallsMatchOutOfPlace) {
  const int64_t n = 257;
  for (const Activation& act : activations()) {
    const auto x = test_inputs(n, 300);
    const auto dy = test::random_normal(n, 301);
    std::vector<float> y = test::poisoned(n), dx = test::poisoned(n);
    act.forward(x.data(), y.data(), n);
    const std::vector<float>& saved = act.backward_reads_output ? y : x;
    act.backward(saved.data(), dy.data(), dx.data(), n);
    std::vector<float> in_place = x, grad_in_place = dy;
    act.forward(in_place.data(), in_place.data(), n);
    act.backward(saved.data(), grad_in_place.data(), grad_in_place.data(), n);
    EXPECT_EQ(in_place, y) << act.name;
    EXPECT_EQ(grad_in_place, dx) << act.name;
  }
}

// add and scale are single fp32 operations: bit-exact against the same operation in the test.
TEST(CpuActivations, AddAndScaleAreOneFloatOperation) {
  for (int64_t n : kSizes) {
    const auto a = test::random_normal(n, 400 + n), b = test::random_normal(n, 500 + n);
    std::vector<float> sum = test::poisoned(n), scaled = test::poisoned(n);
    cpu::add_forward(a.data(), b.data(), sum.data(), n);
    cpu::scale_forward(a.data(), scaled.data(), n, 32.0f * 0.7f);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(sum[i], a[i] + b[i]) << i;
      ASSERT_EQ(scaled[i], (32.0f * 0.7f) * a[i]) << i;
    }
    EXPECT_GT(test::l2_norm(sum), 0.0);
    EXPECT_GT(test::l2_norm(scaled), 0.0);
  }
}

// scale's backward is scale_forward on dy (documented in the header); checked like every other op.
TEST(CpuActivations, ScaleGradientMatchesFiniteDifferences) {
  const int64_t n = 30;
  const float scale = -1.75f;
  auto x = test::random_normal(n, 600);
  const auto w = test::random_normal(n, 601);
  auto loss = [&] {
    std::vector<float> y = test::poisoned(n);
    cpu::scale_forward(x.data(), y.data(), n, scale);
    return test::project(y, w);
  };
  std::vector<float> dx = test::poisoned(n);
  cpu::scale_forward(w.data(), dx.data(), n, scale);
  const auto g = test::compare_with_finite_differences(x, loss, dx);
  EXPECT_LE(g.relative_error, kGradientTolerance) << g.describe();
}

TEST(CpuActivations, RejectNegativeCounts) {
  float v = 0;
  EXPECT_THROW(cpu::gelu_forward(&v, &v, -1), UsageError);
  EXPECT_THROW(cpu::relu_backward(&v, &v, &v, -1), UsageError);
  EXPECT_THROW(cpu::add_forward(&v, &v, &v, -1), UsageError);
}

}  // namespace
}  // namespace sb
