// CPU reference per-row scaling (src/cpu/scale_rows.h).
#include "src/cpu/scale_rows.h"

#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

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

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_scale_rows_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"scale_rows",
       [](CpuExecutor& e, const Node& n) {
         cpu::scale_rows_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                 size_attr(n, "cols"));
       }},
  });
}

}  // namespace sb::detail
