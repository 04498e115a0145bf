// Backward rules of the ConvS2S ops (src/engine/backward_rules.h): GLU, weight normalisation, GradMultiply and
// per-row scaling. Backward nodes carry the forward's size attributes.
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

// dx (rows, 2 · cols) from the forward input x and dy.
std::vector<Contribution> glu_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"glu_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// inputs v, g; outputs w, norms. One node writes both parameters' gradients from dw, v, g and the norms.
std::vector<Contribution> weight_norm_backward(BackwardContext& ctx, const Node& node,
                                               const std::vector<TensorId>& dout) {
  const TensorId v = node.inputs[0], g = node.inputs[1];
  const TensorId dv = ctx.gradient_like(v), dg = ctx.gradient_like(g);
  ctx.emit(Node{"weight_norm_backward", {dout[0], v, g, node.outputs[1]}, {dv, dg}, node.attributes, true});
  return {{ctx.needs_gradient(v) ? dv : kNoTensor, true}, {ctx.needs_gradient(g) ? dg : kNoTensor, true}};
}

// The forward pass is a view; the gradient is scaled (the same `scale` node as GraphBuilder::scale's backward).
std::vector<Contribution> grad_multiply_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// dx = the same row factors applied to dy; the factors are data and take no gradient.
std::vector<Contribution> scale_rows_backward(BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale_rows", {dout[0], node.inputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}, {kNoTensor, false}};
}

}  // namespace

const BackwardRuleTable& convs2s_backward_rules() {
  static const BackwardRuleTable table = {
      {"glu", glu_backward},
      {"weight_norm", weight_norm_backward},
      {"grad_multiply", grad_multiply_backward},
      {"scale_rows", scale_rows_backward},
  };
  return table;
}

}  // namespace sb::detail
