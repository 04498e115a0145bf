// The transposed-convolution family: GraphBuilder::conv_transpose2d (pix2pixHD's up-sampling layers), its
// backward rule and its op's row. The node carries the geometry of the conv y -> x whose backward-data pass it
// is (the conv2d family's Conv2dGeometry and its attribute encoding, store_conv2d_geometry) plus
// "output_padding", so the family needs no params struct of its own. Kernels: src/cpu/conv_transpose2d.cpp
// (reference) and, on the device, the conv2d family's cuDNN runner.
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"
// The conv2d family's geometry and its check, not yet in src/core/ops (issue 24's core-a moves them there).
#include "src/core/ops/conv2d.h"

namespace sb {

TensorId GraphBuilder::conv_transpose2d(TensorId x, TensorId weight, TensorId bias, const Conv2dOptions& options,
                                        int64_t output_padding) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const std::vector<int64_t> ws = graph_.tensor(weight).shape;
  if (xs.size() != 4) throw UsageError("conv_transpose2d: input must be (N, H, W, C_in), got " + shape_text(xs));
  if (ws.size() != 4 || ws[0] != xs[3]) {
    throw UsageError("conv_transpose2d: weight must be (C_in, R, S, C_out) with C_in = " + std::to_string(xs[3]) +
                     ", got " + shape_text(ws));
  }
  if (options.same || options.groups != 1 || options.dilation_h != 1 || options.dilation_w != 1) {
    throw UsageError("conv_transpose2d: explicit padding, no groups, no dilation");
  }
  if (options.pad_top != options.pad_bottom || options.pad_left != options.pad_right) {
    throw UsageError("conv_transpose2d: padding must be symmetric (torch.nn.ConvTranspose2d's)");
  }
  if (output_padding < 0 || output_padding >= options.stride_h || output_padding >= options.stride_w) {
    throw UsageError("conv_transpose2d: output_padding " + std::to_string(output_padding) +
                     " must be >= 0 and smaller than the stride");
  }
  if (bias != kNoTensor && graph_.tensor(bias).shape != std::vector<int64_t>{ws[3]}) {
    throw UsageError("conv_transpose2d: bias must be (C_out) = (" + std::to_string(ws[3]) + ")");
  }
  // The geometry of the conv y -> x whose backward-data pass this is: its input is our output.
  Conv2dGeometry g;
  g.batch = xs[0], g.out_h = xs[1], g.out_w = xs[2], g.out_c = xs[3];
  g.kernel_h = ws[1], g.kernel_w = ws[2], g.in_c = ws[3];
  g.stride_h = options.stride_h, g.stride_w = options.stride_w;
  g.pad_top = g.pad_bottom = options.pad_top;
  g.pad_left = g.pad_right = options.pad_left;
  g.in_h = (g.out_h - 1) * g.stride_h - 2 * g.pad_top + g.kernel_h + output_padding;
  g.in_w = (g.out_w - 1) * g.stride_w - 2 * g.pad_left + g.kernel_w + output_padding;
  if (g.in_h < 1 || g.in_w < 1 || options.pad_top < 0 || options.pad_left < 0) {
    throw UsageError("conv_transpose2d: the padding leaves no output for input " + shape_text(xs));
  }
  check_conv2d_geometry(g);  // also: the conv maps the output extent back to the input's

  const TensorId w = in_compute_dtype(weight);
  const TensorId y = activation(next_name("conv_transpose2d"), {g.batch, g.in_h, g.in_w, g.in_c});
  // The padding is symmetric, so the front copies are those of padded channels (conv2d_cudnn_in_channels).
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("conv_transpose2d_workspace"),
                            int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_)));
  Node node{"conv_transpose2d", {x, w}, {y, workspace}, {{"output_padding", double(output_padding)}}, false};
  if (bias != kNoTensor) node.inputs.push_back(converted(bias, DType::kFloat32));
  store_conv2d_geometry(g, node.attributes);
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

namespace {

// The forward pass is the backward-data pass of the conv y -> x (its geometry is the node's), so dx is that
// conv's forward pass over dy, dw its backward-filter pass with dy as the conv's input and x as its output
// gradient, and the bias gradient the column sums of dy viewed as (N·Ho·Wo, C_out).
std::vector<detail::Contribution> conv_transpose2d_backward(detail::BackwardContext& ctx, const Node& node,
                                                            const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], w = node.inputs[1], dy = dout[0];
  std::vector<detail::Contribution> result(node.inputs.size());
  if (ctx.needs_gradient(x)) {
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{"conv2d", {dy, w}, {dx, ops::workspace_like(ctx, node.outputs[1], ".data")}, node.attributes, true});
    result[0] = {dx, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {dy, x}, {dw, ops::workspace_like(ctx, node.outputs[1], ".filter")},
                  node.attributes, true});
    result[1] = {dw, true};
  }
  if (node.inputs.size() > 2 && ctx.needs_gradient(node.inputs[2])) {
    const NodeAttributes& a = node.attributes;
    const TensorId dbias = ctx.gradient_like(node.inputs[2]);
    ctx.emit(Node{"bias_backward", {dy}, {dbias},
                  {{"rows", a.at("batch") * a.at("in_h") * a.at("in_w")}, {"cols", a.at("in_c")}}, true});
    result[2] = {dbias, true};
  }
  return result;
}

}  // namespace

const OpDefs& conv_transpose2d_ops() {
  // Its backward emits the conv2d family's ops and bias_backward: no backward op of its own.
  static const OpDefs ops = {
      {"conv_transpose2d", "conv_transpose2d", OpGradient::kDifferentiable, conv_transpose2d_backward},
  };
  return ops;
}

}  // namespace sb
