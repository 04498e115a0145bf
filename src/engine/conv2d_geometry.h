// The sizes of one 2-D convolution in NHWC, shared by the graph builder (which computes them once and stores
// them as node attributes), the CPU reference (src/cpu/conv2d.h) and the cuDNN runner (src/cuda/conv2d.h).
// Layouts: x (N, H, W, C), y (N, Ho, Wo, K), weight (K, R, S, C / groups) — cuDNN's NHWC filter layout (KRSC),
// so the CUDA device reads the parameter as stored. Padding is per side (TF "SAME" on even inputs with
// stride 2 pads one more at the bottom/right than at the top/left).
#pragma once

#include <cstdint>
#include <string>

#include "scalebench/graph.h"

namespace sb {

struct Conv2dGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;

  int64_t in_per_group() const { return in_c / groups; }
  int64_t out_per_group() const { return out_c / groups; }
  int64_t x_elements() const { return batch * in_h * in_w * in_c; }
  int64_t y_elements() const { return batch * out_h * out_w * out_c; }
  int64_t w_elements() const { return out_c * kernel_h * kernel_w * in_per_group(); }
  bool symmetric_padding() const { return pad_top == pad_bottom && pad_left == pad_right; }
  // Multiply-adds of the forward pass (each backward pass does as many).
  double macs() const { return double(y_elements()) * double(kernel_h * kernel_w * in_per_group()); }
};

// Output extent of one spatial axis: floor((in + pads - dilation (k - 1) - 1) / stride) + 1.
inline int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                                int64_t pad_end) {
  return (in + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride + 1;
}

// Bytes of the zero-padded copy of x that a device without per-side padding (cuDNN's legacy API pads both
// sides alike) convolves when the padding is asymmetric: the extra rows/columns on the wider side are
// materialised, the rest stays implicit. 0 for symmetric padding. Rounded up to 256 bytes.
inline uint64_t conv2d_padded_copy_bytes(const Conv2dGeometry& g, uint64_t element_bytes) {
  if (g.symmetric_padding()) return 0;
  const int64_t dh = g.pad_top > g.pad_bottom ? g.pad_top - g.pad_bottom : g.pad_bottom - g.pad_top;
  const int64_t dw = g.pad_left > g.pad_right ? g.pad_left - g.pad_right : g.pad_right - g.pad_left;
  const uint64_t bytes = uint64_t(g.batch * (g.in_h + dh) * (g.in_w + dw) * g.in_c) * element_bytes;
  return (bytes + 255) / 256 * 256;
}

inline void store_conv2d_geometry(const Conv2dGeometry& g, NodeAttributes& a) {
  a["batch"] = double(g.batch), a["in_h"] = double(g.in_h), a["in_w"] = double(g.in_w), a["in_c"] = double(g.in_c);
  a["out_h"] = double(g.out_h), a["out_w"] = double(g.out_w), a["out_c"] = double(g.out_c);
  a["kernel_h"] = double(g.kernel_h), a["kernel_w"] = double(g.kernel_w);
  a["stride_h"] = double(g.stride_h), a["stride_w"] = double(g.stride_w);
  a["dilation_h"] = double(g.dilation_h), a["dilation_w"] = double(g.dilation_w);
  a["pad_top"] = double(g.pad_top), a["pad_bottom"] = double(g.pad_bottom);
  a["pad_left"] = double(g.pad_left), a["pad_right"] = double(g.pad_right);
  a["groups"] = double(g.groups);
}

inline Conv2dGeometry conv2d_geometry(const NodeAttributes& a) {
  auto get = [&](const char* name) { return static_cast<int64_t>(a.at(name)); };
  Conv2dGeometry g;
  g.batch = get("batch"), g.in_h = get("in_h"), g.in_w = get("in_w"), g.in_c = get("in_c");
  g.out_h = get("out_h"), g.out_w = get("out_w"), g.out_c = get("out_c");
  g.kernel_h = get("kernel_h"), g.kernel_w = get("kernel_w");
  g.stride_h = get("stride_h"), g.stride_w = get("stride_w");
  g.dilation_h = get("dilation_h"), g.dilation_w = get("dilation_w");
  g.pad_top = get("pad_top"), g.pad_bottom = get("pad_bottom");
  g.pad_left = get("pad_left"), g.pad_right = get("pad_right");
  g.groups = get("groups");
  return g;
}

}  // namespace sb
