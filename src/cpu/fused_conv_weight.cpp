// The fused up/down-sampling weights on the CPU (src/cpu/fused_conv_weight.h).
#include "src/cpu/fused_conv_weight.h"

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void fused_conv_weight_forward(const float* w3, float* w4, int64_t out_channels, int64_t in_channels, float factor) {
  for (int64_t k = 0; k < out_channels; ++k) {
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t s = 0; s < 4; ++s) {
        for (int64_t c = 0; c < in_channels; ++c) {
          double sum = 0;
          for (int64_t a = 0; a < 2; ++a) {
            for (int64_t b = 0; b < 2; ++b) {
              const int64_t rr = r - a, ss = s - b;
              if (rr < 0 || rr > 2 || ss < 0 || ss > 2) continue;
              sum += w3[((k * 3 + rr) * 3 + ss) * in_channels + c];
            }
          }
          w4[((k * 4 + r) * 4 + s) * in_channels + c] = static_cast<float>(factor * sum);
        }
      }
    }
  }
}

void fused_conv_weight_backward(const float* dw4, float* dw3, int64_t out_channels, int64_t in_channels,
                                float factor) {
  for (int64_t k = 0; k < out_channels; ++k) {
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t s = 0; s < 3; ++s) {
        for (int64_t c = 0; c < in_channels; ++c) {
          double sum = 0;
          for (int64_t a = 0; a < 2; ++a) {
            for (int64_t b = 0; b < 2; ++b) sum += dw4[((k * 4 + r + a) * 4 + s + b) * in_channels + c];
          }
          dw3[((k * 3 + r) * 3 + s) * in_channels + c] = static_cast<float>(factor * sum);
        }
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_fused_conv_weight_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"fused_conv_weight",
       [](CpuExecutor& e, const Node& n) {
         cpu::fused_conv_weight_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "out_channels"),
                                        size_attr(n, "in_channels"), float_attr(n, "factor"));
       }},
      {"fused_conv_weight_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::fused_conv_weight_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "out_channels"),
                                         size_attr(n, "in_channels"), float_attr(n, "factor"));
       }},
  });
}

}  // namespace sb::detail
