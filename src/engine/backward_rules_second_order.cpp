// Backward rules of StyleGAN's ops and the second-order rules: rules for BACKWARD ops, which autodiff needs
// when a loss contains an input gradient built as forward nodes (R1, append_input_gradient in autodiff.h).
// Each rule below differentiates <u, f(a, b)> for a backward op f, u the gradient of its output: blur2d is
// self-adjoint; minibatch_stddev_backward is non-linear in x (src/cpu/minibatch_stddev.h derives both halves).
// The second-order rules of conv2d_backward_data, leaky_relu_backward, avg_pool2d_backward and add_n live with
// their families (src/core/ops/conv2d.cpp, activations.cpp, pooling.cpp).
#include <map>

#include "src/cpu/noise_injection.h"
#include "src/cpu/style_modulation.h"
#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

// A scratch tensor of `bytes` for one backward node (the CUDA passes' partial sums).
TensorId scratch(BackwardContext& ctx, const std::string& name, int64_t bytes) {
  TensorInfo info;
  info.name = name;
  info.shape = {bytes};
  info.dtype = DType::kUInt8;
  info.role = TensorRole::kWorkspace;
  return ctx.graph().add_tensor(info);
}

int64_t size_of(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }

std::vector<Contribution> blur2d_rule(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"blur2d", {dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

// Inputs x; output y = [x, statistic].
std::vector<Contribution> minibatch_stddev_rule(BackwardContext& ctx, const Node& node,
                                                const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"minibatch_stddev_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

// Inputs x, dy; output dx. One node writes both halves (they share the group statistics).
std::vector<Contribution> minibatch_stddev_backward_rule(BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], dy = node.inputs[1];
  const TensorId dx2 = ctx.gradient_like(x), ddy = ctx.gradient_like(dy);
  ctx.emit(Node{"minibatch_stddev_backward_backward", {x, dy, dout[0]}, {dx2, ddy}, node.attributes});
  return {{ctx.needs_gradient(x) ? dx2 : kNoTensor, true}, {ctx.needs_gradient(dy) ? ddy : kNoTensor, true}};
}

// Losses start the backward pass with the unit gradient (times gradient_weight in a weighted sum).
BackwardRule loss_rule(const char* op) {
  return [op](BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    ctx.emit(Node{op, {node.inputs[0]}, {dx}, node.attributes});
    return std::vector<Contribution>{{dx, true}};
  };
}

std::vector<Contribution> fused_conv_weight_rule(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  const TensorId dw = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"fused_conv_weight_backward", {dout[0]}, {dw}, node.attributes});
  return {{dw, true}};
}

std::vector<Contribution> pixel_norm_rule(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"pixel_norm_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

// Inputs x, weight, sample ids. dx is dy itself; the weight's gradient draws the forward's noise again (the
// node's attributes, hence its Philox range this step).
std::vector<Contribution> noise_injection_rule(BackwardContext& ctx, const Node& node,
                                               const std::vector<TensorId>& dout) {
  std::vector<Contribution> result{{dout[0], false}, {}, {}};
  if (ctx.needs_gradient(node.inputs[1])) {
    const TensorId dweight = ctx.gradient_like(node.inputs[1]);
    const TensorId workspace =
        scratch(ctx, ctx.graph().tensor(dweight).name + ".partials",
                cpu::noise_injection_workspace_bytes(size_of(node, "batch"), size_of(node, "pixels"),
                                                     size_of(node, "channels")));
    ctx.emit(Node{"noise_injection_backward", {dout[0], node.inputs[2]}, {dweight, workspace}, node.attributes});
    result[1] = {dweight, true};
  }
  return result;
}

std::vector<Contribution> style_modulation_rule(BackwardContext& ctx, const Node& node,
                                                const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]), dstyle = ctx.gradient_like(node.inputs[1]);
  const TensorId workspace =
      scratch(ctx, ctx.graph().tensor(dstyle).name + ".partials",
              cpu::style_modulation_workspace_bytes(size_of(node, "batch"), size_of(node, "pixels"),
                                                    size_of(node, "channels")));
  ctx.emit(Node{"style_modulation_backward", {node.inputs[0], node.inputs[1], dout[0]}, {dx, dstyle, workspace},
                node.attributes});
  return {{ctx.needs_gradient(node.inputs[0]) ? dx : kNoTensor, true}, {dstyle, true}};
}

// One node sums every layer's gradient into w's rows; a layer that does not reach the loss contributes zeros.
std::vector<Contribution> style_mix_rule(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node backward{"style_mix_backward", {}, {ctx.gradient_like(node.inputs[0])}, node.attributes};
  for (size_t l = 0; l < node.outputs.size(); ++l) {
    TensorId d = dout[l];
    if (d == kNoTensor) {
      d = ctx.gradient_like(node.outputs[l], "_zero");
      ctx.emit(Node{"zero_fill", {}, {d}, {{"n", double(ctx.graph().tensor(d).elements())}}});
    }
    backward.inputs.push_back(d);
  }
  backward.inputs.push_back(node.inputs[1]);
  ctx.emit(backward);
  return {{backward.outputs[0], true}, {}};
}

}  // namespace

const BackwardRuleTable& stylegan_backward_rules() {
  static const BackwardRuleTable table = {
      {"blur2d", blur2d_rule},
      {"minibatch_stddev", minibatch_stddev_rule},
      {"minibatch_stddev_backward", minibatch_stddev_backward_rule},
      {"softplus_loss", loss_rule("softplus_loss_backward")},
      {"squared_norm_loss", loss_rule("squared_norm_loss_backward")},
      {"fused_conv_weight", fused_conv_weight_rule},
      {"pixel_norm", pixel_norm_rule},
      {"noise_injection", noise_injection_rule},
      {"style_modulation", style_modulation_rule},
      {"style_mix", style_mix_rule},
  };
  return table;
}

}  // namespace sb::detail
