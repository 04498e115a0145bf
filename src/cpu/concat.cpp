// Channel concatenation and split, CPU reference (concat.h).
#include "src/cpu/concat.h"

#include <algorithm>
#include <numeric>

#include "scalebench/error.h"

namespace sb::cpu {

void concat_last(const std::vector<const float*>& parts, const std::vector<int64_t>& widths, float* y, int64_t rows) {
  SB_CHECK(parts.size() == widths.size() && !parts.empty(), "concat_last: one width per part");
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      std::copy_n(parts[k] + r * widths[k], widths[k], y + r * total + offset);
      offset += widths[k];
    }
  }
}

void split_last(const float* x, const std::vector<float*>& parts, const std::vector<int64_t>& widths, int64_t rows) {
  SB_CHECK(parts.size() == widths.size() && !parts.empty(), "split_last: one width per part");
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      std::copy_n(x + r * total + offset, widths[k], parts[k] + r * widths[k]);
      offset += widths[k];
    }
  }
}

}  // namespace sb::cpu
