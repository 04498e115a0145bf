// The conv2d family (src/core/ops/conv2d.h): the geometry checks, GraphBuilder::conv2d, the backward rules of
// conv2d and (second order, StyleGAN's R1 path) of conv2d_backward_data, and the family's rows.
#include "src/core/ops/conv2d.h"

#include <tuple>
#include <utility>

#include "scalebench/error.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

void check_conv2d_geometry(const Conv2dGeometry& g) {
  const bool positive = g.batch > 0 && g.in_h > 0 && g.in_w > 0 && g.in_c > 0 && g.out_c > 0 && g.kernel_h > 0 &&
                        g.kernel_w > 0 && g.stride_h > 0 && g.stride_w > 0 && g.dilation_h > 0 &&
                        g.dilation_w > 0 && g.groups > 0;
  if (!positive) throw UsageError("conv2d: sizes, strides, dilations and groups must be positive");
  if (g.pad_top < 0 || g.pad_bottom < 0 || g.pad_left < 0 || g.pad_right < 0) {
    throw UsageError("conv2d: padding must be >= 0");
  }
  if (g.in_c % g.groups != 0 || g.out_c % g.groups != 0) {
    throw UsageError("conv2d: groups " + std::to_string(g.groups) + " must divide input channels " +
                     std::to_string(g.in_c) + " and output channels " + std::to_string(g.out_c));
  }
  if (g.out_h != conv_output_size(g.in_h, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom) ||
      g.out_w != conv_output_size(g.in_w, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right) ||
      g.out_h <= 0 || g.out_w <= 0) {
    throw UsageError("conv2d: the output extent does not follow from input, kernel, stride, dilation and padding");
  }
}

namespace {

// TF "SAME": (begin, end) padding of one axis, the odd pixel at the end.
std::pair<int64_t, int64_t> same_padding(int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + dilation * (kernel - 1) + 1 - in, 0);
  return {total / 2, total - total / 2};
}

}  // namespace

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
  check_conv2d_geometry(g);

  const TensorId w = in_compute_dtype(weight);
  const TensorId y = activation(next_name("conv2d"), {g.batch, g.out_h, g.out_w, g.out_c});
  // One workspace size for the three passes: the largest operand bounds what the fast algorithms ask for.
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("conv2d_workspace"),
                            int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_)));

  Node node{"conv2d", {x, w}, {y, workspace}, encode(g), false};
  if (bias != kNoTensor) node.inputs.push_back(converted(bias, DType::kFloat32));
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

namespace {

using detail::BackwardContext;
using detail::Contribution;

// inputs x, w (compute dtype), optional bias (fp32); outputs y, workspace. dx = backward data (dy, w),
// dw = backward filter (x, dy), dbias = column sums of dy viewed as (N·Ho·Wo, K). Each pass gets a fresh
// workspace of the forward's size, placed by liveness like any other.
std::vector<Contribution> conv2d_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], w = node.inputs[1], dy = dout[0];
  std::vector<Contribution> result(node.inputs.size());
  if (ctx.needs_gradient(x)) {
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{"conv2d_backward_data", {dy, w}, {dx, ops::workspace_like(ctx, node.outputs[1], ".data")},
                  node.attributes, true});
    result[0] = {dx, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {x, dy}, {dw, ops::workspace_like(ctx, node.outputs[1], ".filter")},
                  node.attributes, true});
    result[1] = {dw, true};
  }
  if (node.inputs.size() > 2 && ctx.needs_gradient(node.inputs[2])) {
    const NodeAttributes& a = node.attributes;
    const TensorId dbias = ctx.gradient_like(node.inputs[2]);
    ctx.emit(Node{"bias_backward", {dy}, {dbias},
                  {{"rows", a.at("batch") * a.at("out_h") * a.at("out_w")}, {"cols", a.at("out_c")}}, true});
    result[2] = {dbias, true};
  }
  return result;
}

// Second order (R1): conv2d_backward_data(dy, w) = Aᵀ(w) dy is linear in dy and in w, so for u the gradient of
// its output d dy = A(w) u (a conv2d forward pass) and d w = conv2d_backward_filter(u, dy).
// Inputs dy, w; outputs dx, workspace; attributes: the forward conv's geometry (x = dx's shape, y = dy's).
// This is also the forward op of StyleGAN's fused up-sampling conv (GraphBuilder::upscale_conv2d), a
// transposed conv: then "dy" is the layer's input and these are its first-order rules.
std::vector<Contribution> conv2d_backward_data_rule(BackwardContext& ctx, const Node& node,
                                                    const std::vector<TensorId>& dout) {
  const TensorId dy = node.inputs[0], w = node.inputs[1], u = dout[0];
  std::vector<Contribution> result(2);
  if (ctx.needs_gradient(dy)) {
    const TensorId ddy = ctx.gradient_like(dy);
    NodeAttributes forward = node.attributes;
    forward.erase("gradient_weight");
    ctx.emit(Node{"conv2d", {u, w}, {ddy, ops::workspace_like(ctx, node.outputs[1], ".forward")}, forward});
    result[0] = {ddy, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {u, dy}, {dw, ops::workspace_like(ctx, node.outputs[1], ".filter")},
                  node.attributes});
    result[1] = {dw, true};
  }
  return result;
}

}  // namespace

const OpDefs& conv2d_ops() {
  static const OpDefs ops = {
      {"conv2d", "conv2d", OpGradient::kDifferentiable, conv2d_backward},
      {"conv2d_backward_data", "conv2d", OpGradient::kDifferentiable, conv2d_backward_data_rule},
      {"conv2d_backward_filter", "conv2d", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

// StyleGAN's fused upsampling: the data gradient of a stride-2 4x4 conv (a conv2d_backward_data node built
// forward).
TensorId GraphBuilder::upscale_conv2d(TensorId x, TensorId weight4x4) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("upscale_conv2d: input must be (N, H, W, C), got " + shape_text(xs));
  const std::vector<int64_t> ws = shape(weight4x4);
  if (ws.size() != 4 || ws[1] != 4 || ws[2] != 4 || ws[0] != xs[3]) {
    throw UsageError("upscale_conv2d: weight " + shape_text(ws) + " must be (K, 4, 4, C) with K = the channels of " +
                     shape_text(xs));
  }
  // The stride-2 conv whose data gradient this is: input (N, 2H, 2W, C), output (N, H, W, K).
  Conv2dGeometry g;
  g.batch = xs[0], g.in_h = 2 * xs[1], g.in_w = 2 * xs[2], g.in_c = ws[3];
  g.out_h = xs[1], g.out_w = xs[2], g.out_c = ws[0];
  g.kernel_h = g.kernel_w = 4, g.stride_h = g.stride_w = 2;
  g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = 1;
  check_conv2d_geometry(g);
  const TensorId w = in_compute_dtype(weight4x4);
  const TensorId y = activation(next_name("upscale_conv"), {g.batch, g.in_h, g.in_w, g.in_c});
  // The conv runner's workspace, padded-channel copies included (a C > 8 not a multiple of 8 would need them).
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("upscale_conv_workspace"),
                            int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_)));
  Node node{"conv2d_backward_data", {x, w}, {y, workspace}, {}, false};
  store_conv2d_geometry(g, node.attributes);
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

}  // namespace sb
