// The largest elementwise difference between two weight vectors (infinite when their sizes differ or a value is
// NaN): how the replay tests compare a replayed run with an eager one, and two eager runs with each other.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace sb {

inline double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst;
}

}  // namespace sb
