// The conv2d family (conv2d, conv2d_backward_data, conv2d_backward_filter): the sizes of one 2-D convolution in
// NHWC, shared by the graph builder (which computes them once and stores them as node attributes: encode), the
// CPU reference (src/cpu/conv2d.h) and the cuDNN runner (src/cuda/conv2d.h); the workspace sizes; the shape
// checks the builders of conv2d, pooling and the transposed conv share.
// Layouts: x (N, H, W, C), y (N, Ho, Wo, K), weight (K, R, S, C / groups) — cuDNN's NHWC filter layout (KRSC),
// so the CUDA device reads the parameter as stored. Padding is per side (TF "SAME" on even inputs with
// stride 2 pads one more at the bottom/right than at the top/left).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/graph_builder.h"

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

// Input channels as cuDNN is given them. A 16-bit convolution with a spatial kernel whose C is not a multiple
// of 8 while K is (pix2pixHD's label maps: C = 36 into its generator, 39 into its discriminator) runs on C
// rounded up to 8, with zero channels in copies of its input and filter: cuDNN's NHWC tensor-core engines want
// C % 8 == 0, and its kernels for the others took 236 ms of pix2pixhd's 532-ms step on H200 for the
// discriminator's first backward-data pass alone. C <= 8 keeps its C: maskrcnn's 7 x 7 RGB stem on 16 x 800 x 1344
// images took 4.1 ms on H200 as it is and 5.8 ms padded to 8 channels (cuDNN's engine 28 against 45). 1 x 1 kernels
// keep their C (not measured).
inline int64_t conv2d_cudnn_in_channels(const Conv2dGeometry& g, uint64_t element_bytes) {
  const bool padded = element_bytes == 2 && g.groups == 1 && g.in_c > 8 && g.in_c % 8 != 0 && g.out_c % 8 == 0 &&
                      g.kernel_h * g.kernel_w > 1;
  return padded ? (g.in_c + 7) / 8 * 8 : g.in_c;
}

// Bytes of the copy of x that cuDNN convolves instead of x: when the padding is asymmetric (cuDNN's legacy API
// pads both sides alike) the extra rows/columns on the wider side are materialised, the rest stays implicit;
// when the channels are padded (conv2d_cudnn_in_channels), so are they. 0 when neither. Rounded up to 256 bytes.
inline uint64_t conv2d_padded_input_bytes(const Conv2dGeometry& g, uint64_t element_bytes) {
  const int64_t c = conv2d_cudnn_in_channels(g, element_bytes);
  if (g.symmetric_padding() && c == g.in_c) return 0;
  const int64_t dh = g.pad_top > g.pad_bottom ? g.pad_top - g.pad_bottom : g.pad_bottom - g.pad_top;
  const int64_t dw = g.pad_left > g.pad_right ? g.pad_left - g.pad_right : g.pad_right - g.pad_left;
  const uint64_t bytes = uint64_t(g.batch * (g.in_h + dh) * (g.in_w + dw) * c) * element_bytes;
  return (bytes + 255) / 256 * 256;
}

// Bytes of the filter's copy with padded channels (K, R, S, C rounded up); 0 when the channels are not padded.
inline uint64_t conv2d_padded_filter_bytes(const Conv2dGeometry& g, uint64_t element_bytes) {
  const int64_t c = conv2d_cudnn_in_channels(g, element_bytes);
  if (c == g.in_c) return 0;
  const uint64_t bytes = uint64_t(g.out_c * g.kernel_h * g.kernel_w * c) * element_bytes;
  return (bytes + 255) / 256 * 256;
}

// The front of a conv node's workspace: the input copy, then the filter copy (each 0 when not needed).
inline uint64_t conv2d_padded_copy_bytes(const Conv2dGeometry& g, uint64_t element_bytes) {
  return conv2d_padded_input_bytes(g, element_bytes) + conv2d_padded_filter_bytes(g, element_bytes);
}

// A conv node's whole workspace: its padded copies (conv2d_padded_copy_bytes) in front of the library's scratch,
// min(limit, max(kConvWorkspaceFloorBytes, 2 x the largest operand)), one size for every pass it runs.
inline uint64_t conv2d_workspace_bytes(const Conv2dGeometry& g, uint64_t element_bytes, uint64_t limit) {
  const uint64_t largest = element_bytes * uint64_t(std::max({g.x_elements(), g.y_elements(), g.w_elements()}));
  return conv2d_padded_copy_bytes(g, element_bytes) + std::min(limit, std::max(kConvWorkspaceFloorBytes, 2 * largest));
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

// Throws UsageError when the geometry is inconsistent (non-positive sizes, groups not dividing C and K, an
// output extent that conv_output_size does not give).
void check_conv2d_geometry(const Conv2dGeometry& g);

// The geometry of a window op (conv2d, pooling) over x (N, H, W, C) with `out_c` outputs and a kh x kw window:
// the options' padding, or TF "SAME" padding for this input; throws UsageError naming `op` when it does not fit.
Conv2dGeometry window_geometry(const char* op, const std::vector<int64_t>& xs, int64_t out_c, int64_t kh, int64_t kw,
                               const Conv2dOptions& options);

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

// The typed-params names every family uses (encode / <family>_params) for the same two functions above: a conv
// node's attributes are its geometry plus matmul_flops (conv2d) or count_include_pad (pooling).
inline NodeAttributes encode(const Conv2dGeometry& g) {
  NodeAttributes a;
  store_conv2d_geometry(g, a);
  return a;
}
inline Conv2dGeometry conv2d_params(const Node& node) { return conv2d_geometry(node.attributes); }

}  // namespace sb
