// Output checks for the op tests (STYLE.md rules 3-4): NaN poison written into outputs before a kernel runs
// (every element must be overwritten), L2 norms for the "not all zeros" assertions, and an elementwise
// |got - ref| <= atol + rtol * |ref| comparison that reports the worst element and the first mismatches.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace sb::test {

inline std::vector<float> poisoned(size_t count) {
  return std::vector<float>(count, std::numeric_limits<float>::quiet_NaN());
}

// Elements still NaN after a kernel that should have written them all (inputs here are never NaN).
inline size_t count_unwritten(const std::vector<float>& output) {
  size_t count = 0;
  for (float v : output) count += std::isnan(v) ? 1 : 0;
  return count;
}

// ||got - want|| / ||want|| in double (||got - want|| when want is all zeros): the graph checks' error measure.
inline double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Elements that are NaN or infinite (an unwritten poison, or an overflow).
inline size_t count_non_finite(const std::vector<float>& values) {
  size_t count = 0;
  for (float v : values) count += std::isfinite(v) ? 0 : 1;
  return count;
}

template <typename T>
double l2_norm(const std::vector<T>& values) {
  double sum = 0;
  for (const T& v : values) sum += static_cast<double>(v) * static_cast<double>(v);
  return std::sqrt(sum);
}

struct CloseComparison {
  size_t mismatches = 0;
  size_t worst_index = 0;
  double worst_excess = -1;  // max over elements of |got - ref| - (atol + rtol |ref|); <= 0 when all pass
  std::string description;

  bool ok() const { return mismatches == 0; }
};

// NaN in `got` counts as a mismatch (an unwritten or corrupted element).
inline CloseComparison compare_close(const std::vector<float>& got, const std::vector<double>& ref,
                                     double atol, double rtol) {
  CloseComparison result;
  std::ostringstream pairs;
  pairs.precision(9);
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    const double bound = atol + rtol * std::fabs(ref[i]);
    const double error = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double excess = std::isnan(error) ? std::numeric_limits<double>::infinity() : error - bound;
    if (excess > result.worst_excess) {
      result.worst_excess = excess;
      result.worst_index = i;
    }
    if (excess > 0) {
      if (result.mismatches < 4) pairs << " [" << i << "] got " << got[i] << " ref " << ref[i] << ";";
      ++result.mismatches;
    }
  }
  if (got.size() != ref.size()) ++result.mismatches;
  std::ostringstream text;
  text.precision(9);
  text << result.mismatches << " of " << got.size() << " elements outside atol " << atol << " rtol " << rtol;
  if (result.worst_index < got.size() && result.worst_index < ref.size()) {
    text << "; worst [" << result.worst_index << "] got " << got[result.worst_index] << " ref "
         << ref[result.worst_index];
  }
  text << ";" << pairs.str();
  result.description = text.str();
  return result;
}

}  // namespace sb::test
