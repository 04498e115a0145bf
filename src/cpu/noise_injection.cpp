// Noise inputs on the CPU (src/cpu/noise_injection.h).
#include "src/cpu/noise_injection.h"

#include <vector>

#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void noise_injection_forward(const float* x, const float* weight, const int32_t* sample_ids, float* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset) {
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < pixels; ++p) {
      const float noise = noise_value(seed, offset, static_cast<uint32_t>(sample_ids[n]), p);
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) y[row + c] = x[row + c] + weight[c] * noise;
    }
  }
}

void noise_injection_backward(const float* dy, const int32_t* sample_ids, float* dweight, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset) {
  std::vector<double> sums(static_cast<size_t>(channels), 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < pixels; ++p) {
      const double noise = noise_value(seed, offset, static_cast<uint32_t>(sample_ids[n]), p);
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) sums[size_t(c)] += dy[row + c] * noise;
    }
  }
  for (int64_t c = 0; c < channels; ++c) dweight[c] = static_cast<float>(sums[size_t(c)]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_noise_injection_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"noise_injection",
       [](CpuExecutor& e, const Node& n) {
         cpu::noise_injection_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.f32(n.outputs[0]),
                                      size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"), e.seed(),
                                      e.dropout_offset(n));
       }},
      {"noise_injection_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::noise_injection_backward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[0]),
                                       size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                       e.seed(), e.dropout_offset(n));
       }},
  });
}

}  // namespace sb::detail
