// Summary statistics of timing samples (include/scalebench/stats.h). Percentiles interpolate linearly
// between closest ranks, as numpy.percentile does by default, so numbers can be checked against numpy
// on the raw samples that the JSON report keeps.
#include "scalebench/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sb {
namespace {

// `sorted` is ascending and non-empty; q in [0, 100]. numpy: position (n-1)*q/100, then interpolate.
double sorted_percentile(const std::vector<double>& sorted, double q) {
  const double position = (static_cast<double>(sorted.size()) - 1) * q / 100.0;
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

void require_samples(const std::vector<double>& samples, const char* who) {
  if (samples.empty()) throw std::invalid_argument(std::string(who) + ": no samples");
}

}  // namespace

double percentile(std::vector<double> samples, double q) {
  require_samples(samples, "percentile");
  if (!(q >= 0 && q <= 100)) {  // written so that NaN fails too
    throw std::invalid_argument("percentile: q = " + std::to_string(q) + " is outside [0, 100]");
  }
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, q);
}

// Throws on empty input like percentile(): a measured placement always has samples, and zeros in a
// report would pass for a real (impossibly fast) measurement.
SampleStats summarize(const std::vector<double>& samples) {
  require_samples(samples, "summarize");
  std::vector<double> sorted(samples);
  std::sort(sorted.begin(), sorted.end());

  SampleStats stats;
  stats.count = sorted.size();
  stats.min = sorted.front();
  stats.max = sorted.back();
  stats.p50 = sorted_percentile(sorted, 50);
  stats.p95 = sorted_percentile(sorted, 95);
  stats.p99 = sorted_percentile(sorted, 99);

  double sum = 0;
  for (double value : sorted) sum += value;
  stats.mean = sum / static_cast<double>(sorted.size());
  // Two passes (mean first) rather than sum of squares: timing samples are large and close together,
  // where E[x^2] - E[x]^2 cancels badly.
  double squares = 0;
  for (double value : sorted) squares += (value - stats.mean) * (value - stats.mean);
  const double stddev = std::sqrt(squares / static_cast<double>(sorted.size()));
  stats.cv = stats.mean != 0 ? stddev / stats.mean : 0;
  return stats;
}

}  // namespace sb
