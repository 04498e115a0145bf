// CPU reference bias ops (src/cpu/bias.h). The column sums walk dy row by row into a row of double
// accumulators, so the reads stay contiguous.
#include "src/cpu/bias.h"

#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_shape(const char* op, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    throw UsageError(std::string(op) + ": negative size rows=" + std::to_string(rows) +
                     " cols=" + std::to_string(cols));
  }
}

}  // namespace

void bias_add_forward(float* x, const float* bias, int64_t rows, int64_t cols) {
  check_shape("bias_add_forward", rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float* x_row = x + r * cols;
    for (int64_t j = 0; j < cols; ++j) x_row[j] += bias[j];
  }
}

void bias_backward(const float* dy, float* dbias, int64_t rows, int64_t cols) {
  check_shape("bias_backward", rows, cols);
  std::vector<double> sums(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* dy_row = dy + r * cols;
    for (int64_t j = 0; j < cols; ++j) sums[j] += dy_row[j];
  }
  for (int64_t j = 0; j < cols; ++j) dbias[j] = static_cast<float>(sums[j]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_bias_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"bias_backward",
       [](CpuExecutor& e, const Node& node) {
         cpu::bias_backward(e.f32(node.inputs[0]), e.f32(node.outputs[0]), size_attr(node, "rows"),
                            size_attr(node, "cols"));
       }},
  });
}

}  // namespace sb::detail
