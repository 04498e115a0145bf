// Transposed convolution's forward pass, CPU reference (src/cpu/conv_transpose2d.h).
#include "src/cpu/conv_transpose2d.h"

#include <vector>

#include "scalebench/error.h"
#include "src/cpu/bias.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void conv_transpose2d_forward(const float* x, const float* weight, float* y, const Conv2dGeometry& g) {
  check_conv2d_geometry(g);
  if (g.groups != 1 || g.dilation_h != 1 || g.dilation_w != 1) {
    throw UsageError("conv_transpose2d: no groups and no dilation");
  }
  const int64_t c_in = g.out_c, c_out = g.in_c;
  std::vector<double> sum(static_cast<size_t>(g.x_elements()), 0.0);  // the conv's x is our y
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t h = 0; h < g.out_h; ++h) {
      for (int64_t w = 0; w < g.out_w; ++w) {
        const float* pixel = x + ((n * g.out_h + h) * g.out_w + w) * c_in;
        for (int64_t r = 0; r < g.kernel_h; ++r) {
          const int64_t oh = h * g.stride_h - g.pad_top + r;
          if (oh < 0 || oh >= g.in_h) continue;
          for (int64_t q = 0; q < g.kernel_w; ++q) {
            const int64_t ow = w * g.stride_w - g.pad_left + q;
            if (ow < 0 || ow >= g.in_w) continue;
            double* out = &sum[static_cast<size_t>(((n * g.in_h + oh) * g.in_w + ow) * c_out)];
            for (int64_t ci = 0; ci < c_in; ++ci) {
              const float* tap = weight + ((ci * g.kernel_h + r) * g.kernel_w + q) * c_out;
              for (int64_t co = 0; co < c_out; ++co) out[co] += double(pixel[ci]) * tap[co];
            }
          }
        }
      }
    }
  }
  for (size_t i = 0; i < sum.size(); ++i) y[i] = static_cast<float>(sum[i]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void conv_transpose2d(CpuExecutor& e, const Node& n) {
  const Conv2dGeometry g = conv2d_geometry(n.attributes);
  cpu::conv_transpose2d_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), g);
  if (n.inputs.size() > 2) {
    cpu::bias_add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[2]), g.batch * g.in_h * g.in_w, g.in_c);
  }
}

}  // namespace

void bind_conv_transpose2d_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {{"conv_transpose2d", conv_transpose2d}});
}

}  // namespace sb::detail
