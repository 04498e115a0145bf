// Backward rules of StyleGAN's ops and the second-order rules: rules for BACKWARD ops, which autodiff needs
// when a loss contains an input gradient built as forward nodes (R1, append_input_gradient in autodiff.h).
// Each rule below differentiates <u, f(a, b)> for a backward op f, u the gradient of its output:
//   conv2d_backward_data(dy, w) = Aᵀ(w) dy is linear in dy and in w:   d dy = A(w) u (a conv2d forward pass),
//                                                                      d w  = conv2d_backward_filter(u, dy);
//   leaky_relu_backward(y, dy) = mask(y) dy, the mask piecewise constant: d dy = mask(y) u, d y = 0;
//   avg_pool2d_backward(dy) = Pᵀ dy:                                   d dy = P u (avg_pool2d);
//   add_n passes u to every term.
// The rules of StyleGAN's own ops (blur2d, minibatch_stddev_backward's second-order rule included) live with
// their families in src/core/ops/<family>.cpp.
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

TensorId workspace_like(BackwardContext& ctx, TensorId workspace, const std::string& suffix) {
  TensorInfo info = ctx.graph().tensor(workspace);
  info.name += suffix;
  return ctx.graph().add_tensor(info);
}

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
    ctx.emit(Node{"conv2d", {u, w}, {ddy, workspace_like(ctx, node.outputs[1], ".forward")}, forward});
    result[0] = {ddy, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {u, dy}, {dw, workspace_like(ctx, node.outputs[1], ".filter")},
                  node.attributes});
    result[1] = {dw, true};
  }
  return result;
}

std::vector<Contribution> leaky_relu_backward_rule(BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>& dout) {
  const TensorId ddy = ctx.gradient_like(node.inputs[1]);
  ctx.emit(Node{"leaky_relu_backward", {node.inputs[0], dout[0]}, {ddy}, node.attributes});
  return {{kNoTensor, false}, {ddy, true}};
}

std::vector<Contribution> avg_pool2d_backward_rule(BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>& dout) {
  const TensorId ddy = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"avg_pool2d", {dout[0]}, {ddy}, node.attributes});
  return {{ddy, true}};
}

std::vector<Contribution> add_n_rule(BackwardContext&, const Node& node, const std::vector<TensorId>& dout) {
  return std::vector<Contribution>(node.inputs.size(), Contribution{dout[0], false});
}

}  // namespace

const BackwardRuleTable& stylegan_backward_rules() {
  static const BackwardRuleTable table = {
      {"conv2d_backward_data", conv2d_backward_data_rule},
      {"leaky_relu_backward", leaky_relu_backward_rule},
      {"avg_pool2d_backward", avg_pool2d_backward_rule},
      {"add_n", add_n_rule},
  };
  return table;
}

}  // namespace sb::detail
