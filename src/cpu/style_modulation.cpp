// Style modulation on the CPU (src/cpu/style_modulation.h).
#include "src/cpu/style_modulation.h"

#include <algorithm>
#include <vector>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void style_modulation_forward(const float* x, const float* style, float* y, int64_t batch, int64_t pixels,
                              int64_t channels) {
  for (int64_t n = 0; n < batch; ++n) {
    const float* s = style + n * 2 * channels;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) y[row + c] = x[row + c] * (1.0f + s[c]) + s[channels + c];
    }
  }
}

void style_modulation_backward(const float* x, const float* style, const float* dy, float* dx, float* dstyle,
                               int64_t batch, int64_t pixels, int64_t channels) {
  std::vector<double> scale_sum(static_cast<size_t>(channels)), shift_sum(static_cast<size_t>(channels));
  for (int64_t n = 0; n < batch; ++n) {
    const float* s = style + n * 2 * channels;
    std::fill(scale_sum.begin(), scale_sum.end(), 0.0);
    std::fill(shift_sum.begin(), shift_sum.end(), 0.0);
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) {
        dx[row + c] = dy[row + c] * (1.0f + s[c]);
        scale_sum[size_t(c)] += double(dy[row + c]) * x[row + c];
        shift_sum[size_t(c)] += dy[row + c];
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      dstyle[n * 2 * channels + c] = static_cast<float>(scale_sum[size_t(c)]);
      dstyle[n * 2 * channels + channels + c] = static_cast<float>(shift_sum[size_t(c)]);
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_style_modulation_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"style_modulation",
       [](CpuExecutor& e, const Node& n) {
         cpu::style_modulation_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                       size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"));
       }},
      {"style_modulation_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::style_modulation_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                        e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "pixels"),
                                        size_attr(n, "channels"));
       }},
  });
}

}  // namespace sb::detail
