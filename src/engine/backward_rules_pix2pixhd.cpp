// Backward rules of the GAN ops added for pix2pixHD (src/engine/backward_rules.h): transposed convolution,
// reflection padding and the two mean losses. Backward nodes carry the forward's size attributes.
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

TensorId workspace_like(BackwardContext& ctx, TensorId forward_workspace, const std::string& suffix) {
  TensorInfo info = ctx.graph().tensor(forward_workspace);
  info.name += suffix;
  return ctx.graph().add_tensor(info);
}

// The forward pass is the backward-data pass of the conv y -> x (its geometry is the node's), so dx is that
// conv's forward pass over dy, dw its backward-filter pass with dy as the conv's input and x as its output
// gradient, and the bias gradient the column sums of dy viewed as (N·Ho·Wo, C_out).
std::vector<Contribution> conv_transpose2d_backward(BackwardContext& ctx, const Node& node,
                                                    const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], w = node.inputs[1], dy = dout[0];
  std::vector<Contribution> result(node.inputs.size());
  if (ctx.needs_gradient(x)) {
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{"conv2d", {dy, w}, {dx, workspace_like(ctx, node.outputs[1], ".data")}, node.attributes, true});
    result[0] = {dx, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {dy, x}, {dw, workspace_like(ctx, node.outputs[1], ".filter")},
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

std::vector<Contribution> reflection_pad2d_backward(BackwardContext& ctx, const Node& node,
                                                    const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"reflection_pad2d_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// The losses start the backward pass (the unit gradient, or its weight in a sum of losses: the node's
// "gradient_weight" attribute, which autodiff sets).
std::vector<Contribution> mse_loss_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"mse_loss_backward", {node.inputs[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// One node writes da and, when b needs one (not a detached target), db = -da.
std::vector<Contribution> l1_loss_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
  const TensorId a = node.inputs[0], b = node.inputs[1];
  const bool want_b = ctx.needs_gradient(b);
  Node backward{"l1_loss_backward", {a, b}, {ctx.gradient_like(a)}, node.attributes, true};
  if (want_b) backward.outputs.push_back(ctx.gradient_like(b));
  ctx.emit(backward);
  return {{ctx.needs_gradient(a) ? backward.outputs[0] : kNoTensor, true},
          {want_b ? backward.outputs[1] : kNoTensor, true}};
}

}  // namespace

const BackwardRuleTable& pix2pixhd_backward_rules() {
  static const BackwardRuleTable table = {
      {"conv_transpose2d", conv_transpose2d_backward},
      {"reflection_pad2d", reflection_pad2d_backward},
      {"mse_loss", mse_loss_backward},
      {"l1_loss", l1_loss_backward},
  };
  return table;
}

}  // namespace sb::detail
