// 2-D convolution CPU reference (conv2d.h). Every pass visits the same (n, ho, wo, k, r, s, c) taps in the same
// order, in double, so the three are exact adjoints of one another up to the final fp32 rounding.
#include "src/cpu/conv2d.h"

#include <vector>

#include "scalebench/error.h"
#include "src/cpu/bias.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

// Calls tap(x_index, y_index, w_index) for every tap that lands inside the input (zero padding elsewhere).
template <typename Tap>
void for_each_tap(const Conv2dGeometry& g, Tap&& tap) {
  const int64_t cg = g.in_per_group(), kg = g.out_per_group();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t y_row = ((n * g.out_h + oh) * g.out_w + ow) * g.out_c;
        for (int64_t k = 0; k < g.out_c; ++k) {
          const int64_t group = k / kg;
          for (int64_t r = 0; r < g.kernel_h; ++r) {
            const int64_t ih = oh * g.stride_h - g.pad_top + r * g.dilation_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t s = 0; s < g.kernel_w; ++s) {
              const int64_t iw = ow * g.stride_w - g.pad_left + s * g.dilation_w;
              if (iw < 0 || iw >= g.in_w) continue;
              const int64_t x_row = ((n * g.in_h + ih) * g.in_w + iw) * g.in_c + group * cg;
              const int64_t w_row = ((k * g.kernel_h + r) * g.kernel_w + s) * cg;
              for (int64_t c = 0; c < cg; ++c) tap(x_row + c, y_row + k, w_row + c);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void conv2d_forward(const float* x, const float* w, float* y, const Conv2dGeometry& g) {
  check_conv2d_geometry(g);
  std::vector<double> sum(static_cast<size_t>(g.y_elements()), 0.0);
  for_each_tap(g, [&](int64_t xi, int64_t yi, int64_t wi) { sum[yi] += double(x[xi]) * w[wi]; });
  for (size_t i = 0; i < sum.size(); ++i) y[i] = static_cast<float>(sum[i]);
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dGeometry& g) {
  check_conv2d_geometry(g);
  std::vector<double> sum(static_cast<size_t>(g.x_elements()), 0.0);
  for_each_tap(g, [&](int64_t xi, int64_t yi, int64_t wi) { sum[xi] += double(dy[yi]) * w[wi]; });
  for (size_t i = 0; i < sum.size(); ++i) dx[i] = static_cast<float>(sum[i]);
}

void conv2d_backward_filter(const float* x, const float* dy, float* dw, const Conv2dGeometry& g) {
  check_conv2d_geometry(g);
  std::vector<double> sum(static_cast<size_t>(g.w_elements()), 0.0);
  for_each_tap(g, [&](int64_t xi, int64_t yi, int64_t wi) { sum[wi] += double(x[xi]) * dy[yi]; });
  for (size_t i = 0; i < sum.size(); ++i) dw[i] = static_cast<float>(sum[i]);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void conv2d(CpuExecutor& e, const Node& n) {
  const Conv2dGeometry g = conv2d_geometry(n.attributes);
  cpu::conv2d_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), g);
  if (n.inputs.size() > 2) {
    cpu::bias_add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[2]), g.batch * g.out_h * g.out_w, g.out_c);
  }
}

void conv2d_backward_data(CpuExecutor& e, const Node& n) {
  cpu::conv2d_backward_data(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes));
}

void conv2d_backward_filter(CpuExecutor& e, const Node& n) {
  cpu::conv2d_backward_filter(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                              conv2d_geometry(n.attributes));
}

}  // namespace

void bind_conv2d_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"conv2d", conv2d},
      {"conv2d_backward_data", conv2d_backward_data},
      {"conv2d_backward_filter", conv2d_backward_filter},
  });
}

}  // namespace sb::detail
