// CPU frozen affine normalisation (src/cpu/frozen_affine.h).
#include "src/cpu/frozen_affine.h"

#include "src/cpu/cpu_bindings.h"
#include "src/core/ops/detection_sizes.h"
#include "src/core/ops/frozen_affine.h"

namespace sb::cpu {

void frozen_affine_forward(const float* x, const float* scale, const float* shift, float* y, int64_t rows,
                           int64_t channels, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const float v = x[r * channels + c] * scale[c] + shift[c];
      y[r * channels + c] = relu && !(v > 0.0f) ? 0.0f : v;
    }
  }
}

void frozen_affine_backward(const float* dy, const float* y, const float* scale, float* dx, int64_t rows,
                            int64_t channels, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      dx[i] = relu && !(y[i] > 0.0f) ? 0.0f : dy[i] * scale[c];
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_frozen_affine_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"frozen_affine",
       [](CpuExecutor& e, const Node& n) {
         cpu::frozen_affine_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                    detection_size(n.attributes, "rows"), detection_size(n.attributes, "channels"),
                                    n.attributes.at("relu") != 0);
       }},
      {"frozen_affine_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::frozen_affine_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                     detection_size(n.attributes, "rows"), detection_size(n.attributes, "channels"),
                                     n.attributes.at("relu") != 0);
       }},
  });
}

}  // namespace sb::detail
