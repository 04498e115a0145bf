// Broadcast add and middle-dimension swap (src/cpu/layout.h).
#include "src/cpu/layout.h"

#include <cstring>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void add_broadcast_forward(const float* x, const float* table, float* y, int64_t repeats, int64_t block) {
  for (int64_t r = 0; r < repeats; ++r) {
    for (int64_t i = 0; i < block; ++i) y[r * block + i] = x[r * block + i] + table[i];
  }
}

void swap_middle(const float* x, float* y, int64_t a, int64_t b, int64_t c, int64_t d) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t k = 0; k < c; ++k) {
        std::memcpy(y + ((i * c + k) * b + j) * d, x + ((i * b + j) * c + k) * d, sizeof(float) * d);
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_layout_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"add_broadcast",
       [](CpuExecutor& e, const Node& n) {
         cpu::add_broadcast_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                    size_attr(n, "repeats"), size_attr(n, "block"));
       }},
      {"swap_middle",
       [](CpuExecutor& e, const Node& n) {
         cpu::swap_middle(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "a"), size_attr(n, "b"),
                          size_attr(n, "c"), size_attr(n, "d"));
       }},
  });
}

}  // namespace sb::detail
