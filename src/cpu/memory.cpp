// The CPU bindings of the "memory" family (src/core/ops/op_catalogue.cpp): views, copies and fills, done inline
// here since they need no kernel of their own. A view's output shares its input's storage (planner.h), so its
// node does nothing.
#include <algorithm>
#include <cstring>

#include "src/cpu/cpu_bindings.h"

namespace sb::detail {

void bind_memory_cpu(CpuKernelTable& table) {
  const CpuKernel nothing = [](CpuExecutor&, const Node&) {};
  bind_cpu_kernels(table, {
      {"view", nothing},
      {"grad_multiply", nothing},  // a view of its input (GraphBuilder::grad_multiply)
      {"stop_gradient", nothing},  // views of their input whose gradient autodiff stops or drops
      {"discard_gradient", nothing},
      {"zero_fill",
       [](CpuExecutor& e, const Node& node) {
         std::memset(e.f32(node.outputs[0]), 0, sizeof(float) * size_attr(node, "n"));
       }},
      {"fill",
       [](CpuExecutor& e, const Node& n) {
         std::fill_n(e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "value"));
       }},
      {"stack",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         for (size_t i = 0; i < node.inputs.size(); ++i) {
           std::memcpy(e.f32(node.outputs[0]) + i * n, e.f32(node.inputs[i]), sizeof(float) * n);
         }
       }},
      {"unstack",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         for (size_t i = 0; i < node.outputs.size(); ++i) {
           std::memcpy(e.f32(node.outputs[i]), e.f32(node.inputs[0]) + i * n, sizeof(float) * n);
         }
       }},
      {"copy",
       [](CpuExecutor& e, const Node& n) {
         std::memmove(e.u8(n.outputs[0]), e.u8(n.inputs[0]), static_cast<size_t>(size_attr(n, "bytes")));
       }},
  });
}

}  // namespace sb::detail
