// Finite-difference gradient checks for the CPU reference kernels (STYLE.md rule 5). The scalar being
// differentiated is a random projection of an op's output, L = sum_i w_i * out_i, evaluated in double, so
// every output element contributes and a gradient that is wrong anywhere shows.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace sb::test {

struct GradientComparison {
  double relative_error = 0;  // ||numeric - analytic|| / max(||numeric||, ||analytic||)
  double numeric_norm = 0;
  double analytic_norm = 0;
  size_t worst_index = 0;
  double worst_numeric = 0;
  double worst_analytic = 0;

  std::string describe() const {
    return "relative error " + std::to_string(relative_error) + ", norms numeric " +
           std::to_string(numeric_norm) + " analytic " + std::to_string(analytic_norm) + ", worst element " +
           std::to_string(worst_index) + ": numeric " + std::to_string(worst_numeric) + " analytic " +
           std::to_string(worst_analytic);
  }
};

// Projection of `output` on `weights`, in double.
inline double project(const std::vector<float>& output, const std::vector<float>& weights) {
  double sum = 0;
  for (size_t i = 0; i < output.size(); ++i) sum += static_cast<double>(output[i]) * weights[i];
  return sum;
}

// Central differences of `loss` with respect to every element of `input` (which loss() reads), compared
// with `analytic`. `input` is restored afterwards. eps 1e-3 suits fp32 kernels on O(1) data. With
// `extrapolate`, the differences at eps and 2·eps are combined by Richardson extrapolation, (4·D(eps) − D(2·eps))/3:
// the eps² terms cancel, so a kink (ReLU, a max) is rarely straddled badly and larger steps stay accurate.
inline GradientComparison compare_with_finite_differences(std::vector<float>& input,
                                                          const std::function<double()>& loss,
                                                          const std::vector<float>& analytic, double eps = 1e-3,
                                                          bool extrapolate = false) {
  GradientComparison result;
  double diff_sq = 0, num_sq = 0, ana_sq = 0, worst = -1;
  auto central = [&](size_t i, double h) {
    const float saved = input[i];
    input[i] = static_cast<float>(saved + h);
    const double up = loss();
    input[i] = static_cast<float>(saved - h);
    const double down = loss();
    input[i] = saved;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const double numeric = extrapolate ? (4 * central(i, eps) - central(i, 2 * eps)) / 3 : central(i, eps);
    const double d = numeric - analytic[i];
    diff_sq += d * d;
    num_sq += numeric * numeric;
    ana_sq += static_cast<double>(analytic[i]) * analytic[i];
    if (std::fabs(d) > worst) {
      worst = std::fabs(d);
      result.worst_index = i;
      result.worst_numeric = numeric;
      result.worst_analytic = analytic[i];
    }
  }
  result.numeric_norm = std::sqrt(num_sq);
  result.analytic_norm = std::sqrt(ana_sq);
  const double scale = std::max(result.numeric_norm, result.analytic_norm);
  result.relative_error = scale > 0 ? std::sqrt(diff_sq) / scale : 0;
  return result;
}

}  // namespace sb::test
