// The weights' moving average on the CPU (src/cpu/ema.h).
#include "src/cpu/ema.h"

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void ema_update(const float* param, float* average, int64_t n, float beta, bool first_step) {
  for (int64_t i = 0; i < n; ++i) average[i] = first_step ? param[i] : param[i] + beta * (average[i] - param[i]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_ema_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"ema_update",  // the first step of a phase (executor step 0) copies: Gs starts as a clone of G
       [](CpuExecutor& e, const Node& n) {
         cpu::ema_update(e.f32(n.inputs[0]), e.f32(n.inputs[1]), size_attr(n, "n"), float_attr(n, "beta"),
                         e.step() == 0);
       }},
  });
}

}  // namespace sb::detail
