// Style mixing on the CPU (src/cpu/style_mix.h).
#include "src/cpu/style_mix.h"

#include <cstring>
#include <vector>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void style_mix_forward(const float* w, const int32_t* crossover, float* const* layers, int64_t num_layers,
                       int64_t batch, int64_t dim) {
  for (int64_t l = 0; l < num_layers; ++l) {
    for (int64_t n = 0; n < batch; ++n) {
      const float* source = w + (crossover[n] > l ? n : batch + n) * dim;
      std::memcpy(layers[l] + n * dim, source, sizeof(float) * size_t(dim));
    }
  }
}

void style_mix_backward(const float* const* dlayers, const int32_t* crossover, float* dw, int64_t num_layers,
                        int64_t batch, int64_t dim) {
  std::memset(dw, 0, sizeof(float) * size_t(2 * batch * dim));
  for (int64_t l = 0; l < num_layers; ++l) {
    for (int64_t n = 0; n < batch; ++n) {
      float* target = dw + (crossover[n] > l ? n : batch + n) * dim;
      for (int64_t d = 0; d < dim; ++d) target[d] += dlayers[l][n * dim + d];
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void style_mix(CpuExecutor& e, const Node& n) {
  std::vector<float*> layers;
  for (TensorId id : n.outputs) layers.push_back(e.f32(id));
  cpu::style_mix_forward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), layers.data(), size_attr(n, "layers"),
                         size_attr(n, "batch"), size_attr(n, "dim"));
}

void style_mix_backward(CpuExecutor& e, const Node& n) {
  std::vector<const float*> layers;
  for (size_t l = 0; l + 1 < n.inputs.size(); ++l) layers.push_back(e.f32(n.inputs[l]));
  cpu::style_mix_backward(layers.data(), e.i32(n.inputs.back()), e.f32(n.outputs[0]), size_attr(n, "layers"),
                          size_attr(n, "batch"), size_attr(n, "dim"));
}

}  // namespace

void bind_style_mix_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"style_mix", style_mix},
      {"style_mix_backward", style_mix_backward},
  });
}

}  // namespace sb::detail
