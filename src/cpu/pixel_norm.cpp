// Pixel norm on the CPU (src/cpu/pixel_norm.h).
#include "src/cpu/pixel_norm.h"

#include <cmath>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

double inverse_rms(const float* row, int64_t cols) {
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c) sum += double(row[c]) * row[c];
  return 1.0 / std::sqrt(sum / double(cols) + kPixelNormEpsilon);
}

}  // namespace

void pixel_norm_forward(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const double scale = inverse_rms(x + r * cols, cols);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>(x[r * cols + c] * scale);
  }
}

void pixel_norm_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const double scale = inverse_rms(x + r * cols, cols);
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += double(dy[r * cols + c]) * x[r * cols + c];
    const double cube = scale * scale * scale * dot / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] = static_cast<float>(scale * dy[r * cols + c] - cube * x[r * cols + c]);
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_pixel_norm_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"pixel_norm",
       [](CpuExecutor& e, const Node& n) {
         cpu::pixel_norm_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"pixel_norm_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::pixel_norm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                  size_attr(n, "cols"));
       }},
  });
}

}  // namespace sb::detail
