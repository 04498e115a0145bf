// Summary statistics of timing samples (every sample is kept; these are derived once, here).
#pragma once

#include <cstddef>
#include <vector>

namespace sb {

struct SampleStats {
  size_t count = 0;
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
  double cv = 0;  // coefficient of variation: population stddev / mean (0 when mean is 0)
};

// Percentile by linear interpolation between closest ranks (numpy's default); q in [0, 100].
double percentile(std::vector<double> samples, double q);
SampleStats summarize(const std::vector<double>& samples);

}  // namespace sb
