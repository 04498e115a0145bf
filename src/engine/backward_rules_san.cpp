// Backward rules of the SAN answer-module ops (src/engine/backward_rules.h, src/cpu/san.h). Each block's
// backward kernel writes every input gradient at once, so every one gets a buffer; only those the loss
// needs are passed on. Masks and the turn mask are data: no gradient. Backward nodes carry the forward's
// sizes and twice its matmul_flops (the gradients of both operands of every product).
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

NodeAttributes backward_attributes(const Node& node) {
  NodeAttributes attributes = node.attributes;
  if (attributes.count("matmul_flops") != 0) attributes["matmul_flops"] *= 2;
  return attributes;
}

// Buffers for the gradients of node.inputs[i] for i in `differentiable`; the contributions follow the
// forward's input order, kNoTensor where an input is data or not needed.
struct InputGradients {
  std::vector<TensorId> buffers;
  std::vector<Contribution> contributions;
};

InputGradients input_gradients(BackwardContext& ctx, const Node& node, const std::vector<size_t>& differentiable) {
  InputGradients result;
  result.contributions.assign(node.inputs.size(), Contribution{});
  for (size_t i : differentiable) {
    const TensorId input = node.inputs[i];
    result.buffers.push_back(ctx.gradient_like(input));
    if (ctx.needs_gradient(input)) result.contributions[i] = {result.buffers.back(), true};
  }
  return result;
}

// inputs x, h, w_ih, w_hh, b_ih, b_hh; outputs h_next, saved_gates.
std::vector<Contribution> gru_cell_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1, 2, 3, 4, 5});
  const auto& in = node.inputs;
  ctx.emit(Node{"gru_cell_backward", {dout[0], in[0], in[1], in[2], in[3], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs memory, mask, weight, bias; outputs summary, saved_alpha.
std::vector<Contribution> self_attention_backward(BackwardContext& ctx, const Node& node,
                                                  const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 2, 3});
  const auto& in = node.inputs;
  ctx.emit(Node{"san_self_attention_backward", {dout[0], in[0], in[1], in[2], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs keys, values, state, mask, weight, bias; outputs summary, saved_projection, saved_alpha. When keys
// and values are one tensor, its two contributions are summed by autodiff.
std::vector<Contribution> bilinear_attention_backward(BackwardContext& ctx, const Node& node,
                                                      const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1, 2, 4, 5});
  const auto& in = node.inputs;
  ctx.emit(Node{"san_bilinear_attention_backward",
                {dout[0], in[0], in[1], in[2], in[3], in[4], node.outputs[1], node.outputs[2]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs x, s; output features.
std::vector<Contribution> merge_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1});
  ctx.emit(Node{"san_merge_backward", {dout[0], node.inputs[0], node.inputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs turn_logits, turn_mask; outputs scores, saved_probs.
std::vector<Contribution> turn_average_backward(BackwardContext& ctx, const Node& node,
                                                const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0});
  ctx.emit(Node{"san_turn_average_backward", {dout[0], node.inputs[1], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

}  // namespace

const BackwardRuleTable& san_backward_rules() {
  // san_turn_mask needs no rule: its outputs never receive a gradient (the turn average treats the mask as
  // data), so autodiff never asks for one.
  static const BackwardRuleTable table = {
      {"gru_cell", gru_cell_backward},
      {"san_self_attention", self_attention_backward},
      {"san_bilinear_attention", bilinear_attention_backward},
      {"san_merge", merge_backward},
      {"san_turn_average", turn_average_backward},
  };
  return table;
}

}  // namespace sb::detail
