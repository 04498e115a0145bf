// Reflection padding, CPU reference (src/cpu/reflection_pad.h): one loop over the padded positions, forward a
// copy from the source pixel, backward a scatter-add into it.
#include "src/cpu/reflection_pad.h"

#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

// f(padded index, source index) over every padded element.
template <typename F>
void for_each_padded(const ReflectionPadGeometry& g, F&& f) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t h = reflected_index(i, g.top, g.in_h);
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t w = reflected_index(j, g.left, g.in_w);
        const int64_t out = ((n * oh + i) * ow + j) * g.channels, in = ((n * g.in_h + h) * g.in_w + w) * g.channels;
        for (int64_t c = 0; c < g.channels; ++c) f(out + c, in + c);
      }
    }
  }
}

}  // namespace

void check_reflection_pad_geometry(const ReflectionPadGeometry& g) {
  if (g.batch < 1 || g.in_h < 1 || g.in_w < 1 || g.channels < 1) {
    throw UsageError("reflection_pad2d: sizes must be positive");
  }
  if (std::min({g.top, g.bottom, g.left, g.right}) < 0 || std::max(g.top, g.bottom) >= g.in_h ||
      std::max(g.left, g.right) >= g.in_w) {
    throw UsageError("reflection_pad2d: pads must be >= 0 and smaller than the extent they mirror (" +
                     std::to_string(g.in_h) + " x " + std::to_string(g.in_w) + ")");
  }
}

void reflection_pad2d_forward(const float* x, float* y, const ReflectionPadGeometry& g) {
  check_reflection_pad_geometry(g);
  for_each_padded(g, [&](int64_t out, int64_t in) { y[out] = x[in]; });
}

void reflection_pad2d_backward(const float* dy, float* dx, const ReflectionPadGeometry& g) {
  check_reflection_pad_geometry(g);
  std::vector<double> sum(static_cast<size_t>(g.batch * g.in_h * g.in_w * g.channels), 0.0);
  for_each_padded(g, [&](int64_t out, int64_t in) { sum[static_cast<size_t>(in)] += dy[out]; });
  for (size_t i = 0; i < sum.size(); ++i) dx[i] = static_cast<float>(sum[i]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_reflection_pad_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"reflection_pad2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::reflection_pad2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), reflection_pad_params(n));
       }},
      {"reflection_pad2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::reflection_pad2d_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), reflection_pad_params(n));
       }},
  });
}

}  // namespace sb::detail
