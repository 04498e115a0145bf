// Resizing CPU reference (upsample.h): plain loops, weights and sums in double.
#include "src/cpu/upsample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check(const ResizeGeometry& g) {
  SB_CHECK(g.batch > 0 && g.in_h > 0 && g.in_w > 0 && g.channels > 0 && g.out_h > 0 && g.out_w > 0,
           "upsample: sizes must be positive");
}

int64_t nearest_source(int64_t o, int64_t in, int64_t out) { return std::min(in - 1, o * in / out); }

// Calls f(x_index, y_index, weight) for every (output pixel, source tap) pair, channels innermost.
template <typename F>
void for_each_bilinear_tap(const ResizeGeometry& g, bool align_corners, F&& f) {
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const LinearTaps th = bilinear_taps(oh, g.in_h, g.out_h, align_corners);
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const LinearTaps tw = bilinear_taps(ow, g.in_w, g.out_w, align_corners);
        const int64_t y_row = ((n * g.out_h + oh) * g.out_w + ow) * g.channels;
        const int64_t rows[2] = {th.i0, th.i1}, cols[2] = {tw.i0, tw.i1};
        const double wr[2] = {th.w0, th.w1}, wc[2] = {tw.w0, tw.w1};
        for (int a = 0; a < 2; ++a) {
          for (int b = 0; b < 2; ++b) {
            const int64_t x_row = ((n * g.in_h + rows[a]) * g.in_w + cols[b]) * g.channels;
            for (int64_t c = 0; c < g.channels; ++c) f(x_row + c, y_row + c, wr[a] * wc[b]);
          }
        }
      }
    }
  }
}

}  // namespace

LinearTaps bilinear_taps(int64_t o, int64_t in, int64_t out, bool align_corners) {
  double src = 0;
  if (align_corners) {
    src = out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
  } else {
    src = std::max((double(o) + 0.5) * double(in) / double(out) - 0.5, 0.0);
  }
  LinearTaps t;
  t.i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
  t.i1 = std::min(t.i0 + 1, in - 1);
  t.w1 = src - double(t.i0);
  t.w0 = 1.0 - t.w1;
  return t;
}

void upsample_nearest_forward(const float* x, float* y, const ResizeGeometry& g) {
  check(g);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t ih = nearest_source(oh, g.in_h, g.out_h), iw = nearest_source(ow, g.in_w, g.out_w);
        const float* src = x + ((n * g.in_h + ih) * g.in_w + iw) * g.channels;
        std::copy(src, src + g.channels, y + ((n * g.out_h + oh) * g.out_w + ow) * g.channels);
      }
    }
  }
}

void upsample_nearest_backward(const float* dy, float* dx, const ResizeGeometry& g) {
  check(g);
  std::vector<double> sum(size_t(g.batch * g.in_h * g.in_w * g.channels), 0.0);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t ih = nearest_source(oh, g.in_h, g.out_h), iw = nearest_source(ow, g.in_w, g.out_w);
        const int64_t x_row = ((n * g.in_h + ih) * g.in_w + iw) * g.channels;
        const int64_t y_row = ((n * g.out_h + oh) * g.out_w + ow) * g.channels;
        for (int64_t c = 0; c < g.channels; ++c) sum[size_t(x_row + c)] += dy[y_row + c];
      }
    }
  }
  std::copy(sum.begin(), sum.end(), dx);
}

void upsample_bilinear_forward(const float* x, float* y, const ResizeGeometry& g, bool align_corners) {
  check(g);
  std::vector<double> sum(size_t(g.batch * g.out_h * g.out_w * g.channels), 0.0);
  for_each_bilinear_tap(g, align_corners, [&](int64_t xi, int64_t yi, double w) { sum[size_t(yi)] += w * x[xi]; });
  std::copy(sum.begin(), sum.end(), y);
}

void upsample_bilinear_backward(const float* dy, float* dx, const ResizeGeometry& g, bool align_corners) {
  check(g);
  std::vector<double> sum(size_t(g.batch * g.in_h * g.in_w * g.channels), 0.0);
  for_each_bilinear_tap(g, align_corners, [&](int64_t xi, int64_t yi, double w) { sum[size_t(xi)] += w * dy[yi]; });
  std::copy(sum.begin(), sum.end(), dx);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_upsample_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"upsample_nearest",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_nearest_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), upsample_params(n));
       }},
      {"upsample_nearest_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_nearest_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), upsample_params(n));
       }},
      {"upsample_bilinear",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_bilinear_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), upsample_params(n),
                                        upsample_params(n).align_corners);
       }},
      {"upsample_bilinear_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::upsample_bilinear_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), upsample_params(n),
                                         upsample_params(n).align_corners);
       }},
  });
}

}  // namespace sb::detail
