// Pooling CPU reference (pooling.h): plain loops, sums in double.
#include "src/cpu/pooling.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

// The divisor of the average at (oh, ow).
int64_t window_count(const Conv2dGeometry& g, int64_t oh, int64_t ow, bool count_include_pad) {
  if (count_include_pad) return g.kernel_h * g.kernel_w;
  const int64_t h0 = oh * g.stride_h - g.pad_top, w0 = ow * g.stride_w - g.pad_left;
  const int64_t rows = std::min(h0 + g.kernel_h, g.in_h) - std::max<int64_t>(h0, 0);
  const int64_t cols = std::min(w0 + g.kernel_w, g.in_w) - std::max<int64_t>(w0, 0);
  return rows * cols;
}

// Calls f(n, oh, ow, ih, iw) for every in-bounds tap of every window.
template <typename F>
void for_each_window_tap(const Conv2dGeometry& g, F&& f) {
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        for (int64_t r = 0; r < g.kernel_h; ++r) {
          const int64_t ih = oh * g.stride_h - g.pad_top + r;
          if (ih < 0 || ih >= g.in_h) continue;
          for (int64_t s = 0; s < g.kernel_w; ++s) {
            const int64_t iw = ow * g.stride_w - g.pad_left + s;
            if (iw >= 0 && iw < g.in_w) f(n, oh, ow, ih, iw);
          }
        }
      }
    }
  }
}

}  // namespace

void max_pool2d_forward(const float* x, float* y, int32_t* argmax, const Conv2dGeometry& g) {
  check_pool_geometry(g);
  const int64_t c_count = g.in_c;
  std::vector<float> best(size_t(g.y_elements()), -std::numeric_limits<float>::infinity());
  std::vector<int32_t> where(best.size(), -1);
  for_each_window_tap(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
    const int64_t out_row = ((n * g.out_h + oh) * g.out_w + ow) * c_count;
    const int64_t in_row = ((n * g.in_h + ih) * g.in_w + iw) * c_count;
    for (int64_t c = 0; c < c_count; ++c) {
      if (where[out_row + c] < 0 || x[in_row + c] > best[out_row + c]) {
        best[out_row + c] = x[in_row + c];
        where[out_row + c] = int32_t(ih * g.in_w + iw);
      }
    }
  });
  std::copy(best.begin(), best.end(), y);
  std::copy(where.begin(), where.end(), argmax);
}

void max_pool2d_backward(const float* dy, const int32_t* argmax, float* dx, const Conv2dGeometry& g) {
  check_pool_geometry(g);
  std::vector<double> sum(size_t(g.x_elements()), 0.0);
  const int64_t image = g.in_h * g.in_w;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_h * g.out_w; ++o) {
      for (int64_t c = 0; c < g.in_c; ++c) {
        const int64_t i = (n * g.out_h * g.out_w + o) * g.in_c + c;
        SB_CHECK(argmax[i] >= 0 && argmax[i] < image, "max_pool2d_backward: argmax outside the image");
        sum[size_t((n * image + argmax[i]) * g.in_c + c)] += dy[i];
      }
    }
  }
  std::copy(sum.begin(), sum.end(), dx);
}

void avg_pool2d_forward(const float* x, float* y, const Conv2dGeometry& g, bool count_include_pad) {
  check_pool_geometry(g, count_include_pad);
  std::vector<double> sum(size_t(g.y_elements()), 0.0);
  for_each_window_tap(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
    const int64_t out_row = ((n * g.out_h + oh) * g.out_w + ow) * g.in_c;
    const int64_t in_row = ((n * g.in_h + ih) * g.in_w + iw) * g.in_c;
    for (int64_t c = 0; c < g.in_c; ++c) sum[size_t(out_row + c)] += x[in_row + c];
  });
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const double count = double(window_count(g, oh, ow, count_include_pad));
        const int64_t out_row = ((n * g.out_h + oh) * g.out_w + ow) * g.in_c;
        for (int64_t c = 0; c < g.in_c; ++c) y[out_row + c] = float(sum[size_t(out_row + c)] / count);
      }
    }
  }
}

void avg_pool2d_backward(const float* dy, float* dx, const Conv2dGeometry& g, bool count_include_pad) {
  check_pool_geometry(g, count_include_pad);
  std::vector<double> sum(size_t(g.x_elements()), 0.0);
  for_each_window_tap(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
    const double count = double(window_count(g, oh, ow, count_include_pad));
    const int64_t out_row = ((n * g.out_h + oh) * g.out_w + ow) * g.in_c;
    const int64_t in_row = ((n * g.in_h + ih) * g.in_w + iw) * g.in_c;
    for (int64_t c = 0; c < g.in_c; ++c) sum[size_t(in_row + c)] += dy[out_row + c] / count;
  });
  std::copy(sum.begin(), sum.end(), dx);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_pooling_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"max_pool2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::max_pool2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), e.i32(n.outputs[1]),
                                 conv2d_geometry(n.attributes));
       }},
      {"max_pool2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::max_pool2d_backward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[0]),
                                  conv2d_geometry(n.attributes));
       }},
      {"avg_pool2d",
       [](CpuExecutor& e, const Node& n) {
         cpu::avg_pool2d_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes),
                                 size_attr(n, "count_include_pad") != 0);
       }},
      {"avg_pool2d_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::avg_pool2d_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), conv2d_geometry(n.attributes),
                                  size_attr(n, "count_include_pad") != 0);
       }},
  });
}

}  // namespace sb::detail
