// CPU reference GLU (src/cpu/glu.h): plain loops, double arithmetic, one rounding per stored value.
#include "src/cpu/glu.h"

#include <cmath>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_sizes(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError(std::string(op) + ": negative size " + std::to_string(rows) + " x " + std::to_string(cols));
  }
}

// sigmoid(b) and 1 - sigmoid(b) from t = exp(-|b|) in (0, 1]: no overflow, no cancellation in 1 - s.
struct Gate {
  double s, one_minus_s;
};
Gate gate(double b) {
  const double t = std::exp(-std::fabs(b)), r = 1.0 / (1.0 + t);
  return b >= 0 ? Gate{r, t * r} : Gate{t * r, r};
}

}  // namespace

void glu_forward(const float* x, float* y, int64_t rows, int64_t cols) {
  check_sizes("glu_forward", rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = x + r * 2 * cols;
    const float* b = a + cols;
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>(a[c] * gate(b[c]).s);
  }
}

void glu_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t cols) {
  check_sizes("glu_backward", rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = x + r * 2 * cols;
    const float* b = a + cols;
    float* da = dx + r * 2 * cols;
    float* db = da + cols;
    for (int64_t c = 0; c < cols; ++c) {
      const Gate s = gate(b[c]);
      const double g = dy[r * cols + c];
      da[c] = static_cast<float>(g * s.s);
      db[c] = static_cast<float>(g * a[c] * s.s * s.one_minus_s);
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_glu_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"glu",
       [](CpuExecutor& e, const Node& n) {
         cpu::glu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"glu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::glu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                           size_attr(n, "cols"));
       }},
  });
}

}  // namespace sb::detail
