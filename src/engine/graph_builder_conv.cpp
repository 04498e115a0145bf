// GraphBuilder's convolution and pooling (include/scalebench/graph_builder.h): shape checks, "SAME" padding,
// the window geometry as node attributes, the conv node's workspace tensor.
#include <algorithm>
#include <tuple>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/pooling.h"
#include "src/engine/conv2d_geometry.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

// TF "SAME": (begin, end) padding of one axis, the odd pixel at the end.
std::pair<int64_t, int64_t> same_padding(int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + dilation * (kernel - 1) + 1 - in, 0);
  return {total / 2, total - total / 2};
}

// The geometry of a window op over x (N, H, W, C) with `out_c` outputs and a kh x kw window.
Conv2dGeometry window_geometry(const char* op, const std::vector<int64_t>& xs, int64_t out_c, int64_t kh, int64_t kw,
                               const Conv2dOptions& options) {
  if (xs.size() != 4) throw UsageError(std::string(op) + ": input must be (N, H, W, C), got " + shape_text(xs));
  if (options.stride_h < 1 || options.stride_w < 1 || options.dilation_h < 1 || options.dilation_w < 1) {
    throw UsageError(std::string(op) + ": strides and dilations must be >= 1");
  }
  if (kh < 1 || kw < 1) throw UsageError(std::string(op) + ": the window must be at least 1 x 1");
  Conv2dGeometry g;
  g.batch = xs[0], g.in_h = xs[1], g.in_w = xs[2], g.in_c = xs[3];
  g.out_c = out_c, g.kernel_h = kh, g.kernel_w = kw;
  g.stride_h = options.stride_h, g.stride_w = options.stride_w;
  g.dilation_h = options.dilation_h, g.dilation_w = options.dilation_w;
  g.groups = options.groups;
  if (options.same) {
    std::tie(g.pad_top, g.pad_bottom) = same_padding(g.in_h, g.kernel_h, g.stride_h, g.dilation_h);
    std::tie(g.pad_left, g.pad_right) = same_padding(g.in_w, g.kernel_w, g.stride_w, g.dilation_w);
  } else {
    g.pad_top = options.pad_top, g.pad_bottom = options.pad_bottom;
    g.pad_left = options.pad_left, g.pad_right = options.pad_right;
  }
  g.out_h = conv_output_size(g.in_h, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom);
  g.out_w = conv_output_size(g.in_w, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right);
  if (g.out_h < 1 || g.out_w < 1) {
    throw UsageError(std::string(op) + ": the " + std::to_string(kh) + " x " + std::to_string(kw) +
                     " window (with its dilation) is larger than the padded input " + shape_text(xs));
  }
  return g;
}

}  // namespace

TensorId GraphBuilder::conv2d(TensorId x, TensorId weight, TensorId bias, const Conv2dOptions& options) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const std::vector<int64_t> ws = graph_.tensor(weight).shape;
  if (xs.size() != 4) throw UsageError("conv2d: input must be (N, H, W, C), got " + shape_text(xs));
  if (ws.size() != 4) throw UsageError("conv2d: weight must be (K, R, S, C / groups), got " + shape_text(ws));
  if (options.groups < 1 || xs[3] % options.groups != 0 || ws[0] % options.groups != 0) {
    throw UsageError("conv2d: groups " + std::to_string(options.groups) + " must divide the input channels of " +
                     shape_text(xs) + " and the output channels of weight " + shape_text(ws));
  }
  if (ws[3] * options.groups != xs[3]) {
    throw UsageError("conv2d: weight " + shape_text(ws) + " does not fit input " + shape_text(xs) + " with groups " +
                     std::to_string(options.groups));
  }
  if (bias != kNoTensor && graph_.tensor(bias).shape != std::vector<int64_t>{ws[0]}) {
    throw UsageError("conv2d: bias must be (K) = (" + std::to_string(ws[0]) + ")");
  }
  const Conv2dGeometry g = window_geometry("conv2d", xs, ws[0], ws[1], ws[2], options);
  cpu::check_conv2d_geometry(g);

  const TensorId w = in_compute_dtype(weight);
  const TensorId y = activation(next_name("conv2d"), {g.batch, g.out_h, g.out_w, g.out_c});
  // One workspace size for the three passes: the largest operand bounds what the fast algorithms ask for.
  TensorInfo scratch;
  scratch.name = next_name("conv2d_workspace");
  scratch.shape = {int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_))};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);

  Node node{"conv2d", {x, w}, {y, workspace}, {}, false};
  if (bias != kNoTensor) node.inputs.push_back(converted(bias, DType::kFloat32));
  store_conv2d_geometry(g, node.attributes);
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

}  // namespace sb

namespace sb {
namespace {

Conv2dGeometry pool_geometry(const char* op, const std::vector<int64_t>& xs, int64_t kh, int64_t kw,
                             Conv2dOptions options, bool windows_of_padding_allowed = false) {
  if (options.dilation_h != 1 || options.dilation_w != 1 || options.groups != 1) {
    throw UsageError(std::string(op) + ": pooling takes no dilation or groups");
  }
  if (xs.size() == 4) options.groups = xs[3];  // a pooling window is depthwise
  const Conv2dGeometry g = window_geometry(op, xs, xs.size() == 4 ? xs[3] : 0, kh, kw, options);
  cpu::check_pool_geometry(g, windows_of_padding_allowed);
  return g;
}

}  // namespace

TensorId GraphBuilder::max_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options) {
  x = in_compute_dtype(x);
  const Conv2dGeometry g = pool_geometry("max_pool2d", graph_.tensor(x).shape, kernel, kernel, options);
  const TensorId y = activation(next_name("max_pool"), {g.batch, g.out_h, g.out_w, g.out_c});
  const TensorId argmax = activation(next_name("max_pool_argmax"), {g.batch, g.out_h, g.out_w, g.out_c}, DType::kInt32);
  Node node{"max_pool2d", {x}, {y, argmax}, {}, false};
  store_conv2d_geometry(g, node.attributes);
  graph_.add_node(node);
  return y;
}

TensorId GraphBuilder::avg_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options, bool count_include_pad) {
  x = in_compute_dtype(x);
  const Conv2dGeometry g =
      pool_geometry("avg_pool2d", graph_.tensor(x).shape, kernel, kernel, options, count_include_pad);
  const TensorId y = activation(next_name("avg_pool"), {g.batch, g.out_h, g.out_w, g.out_c});
  Node node{"avg_pool2d", {x}, {y}, {{"count_include_pad", count_include_pad ? 1.0 : 0.0}}, false};
  store_conv2d_geometry(g, node.attributes);
  graph_.add_node(node);
  return y;
}

TensorId GraphBuilder::global_avg_pool(TensorId x) {
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("global_avg_pool: input must be (N, H, W, C), got " + shape_text(xs));
  x = in_compute_dtype(x);
  const Conv2dGeometry g = pool_geometry("global_avg_pool", xs, xs[1], xs[2], Conv2dOptions{});
  const TensorId y = activation(next_name("global_avg_pool"), {g.batch, 1, 1, g.out_c});
  Node node{"avg_pool2d", {x}, {y}, {{"count_include_pad", 1.0}}, false};
  store_conv2d_geometry(g, node.attributes);
  graph_.add_node(node);
  return y;
}

}  // namespace sb
