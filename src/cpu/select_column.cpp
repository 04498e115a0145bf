// Column select and its gradient (src/cpu/select_column.h).
#include "src/cpu/select_column.h"

#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_sizes(const char* op, int64_t rows, int64_t cols, int64_t column) {
  SB_CHECK(rows >= 0 && cols >= 1, std::string(op) + ": rows must be >= 0 and cols >= 1");
  SB_CHECK(column >= 0 && column < cols, std::string(op) + ": column must be in [0, cols)");
}

}  // namespace

void select_column_forward(const float* x, float* y, int64_t rows, int64_t cols, int64_t column) {
  check_sizes("select_column_forward", rows, cols, column);
  for (int64_t r = 0; r < rows; ++r) y[r] = x[r * cols + column];
}

void select_column_backward(const float* dy, float* dx, int64_t rows, int64_t cols, int64_t column) {
  check_sizes("select_column_backward", rows, cols, column);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = c == column ? dy[r] : 0.0f;
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_select_column_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"select_column",
       [](CpuExecutor& e, const Node& n) {
         cpu::select_column_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                    size_attr(n, "cols"), size_attr(n, "column"));
       }},
      {"select_column_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::select_column_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                     size_attr(n, "cols"), size_attr(n, "column"));
       }},
  });
}

}  // namespace sb::detail
