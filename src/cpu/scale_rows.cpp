// CPU reference per-row scaling (src/cpu/scale_rows.h).
#include "src/cpu/scale_rows.h"

#include <string>

#include "scalebench/error.h"

namespace sb::cpu {

void scale_rows_forward(const float* x, const float* factors, float* y, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError("scale_rows_forward: negative size " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = factors[r] * x[r * cols + c];
  }
}

}  // namespace sb::cpu
