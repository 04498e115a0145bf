// Backward rules of the convolutional-network ops (src/engine/backward_rules.h): conv2d and the ops added
// with it for the CNN workloads. Backward nodes carry the forward's size attributes.
#include <map>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

// A fresh workspace tensor of the forward's size for one backward pass (each pass its own, placed by
// liveness like any other).
TensorId workspace_like(BackwardContext& ctx, TensorId forward_workspace, const std::string& suffix) {
  TensorInfo info = ctx.graph().tensor(forward_workspace);
  info.name += suffix;
  return ctx.graph().add_tensor(info);
}

// inputs x, w (compute dtype), optional bias (fp32); outputs y, workspace. dx = backward data (dy, w),
// dw = backward filter (x, dy), dbias = column sums of dy viewed as (N·Ho·Wo, K).
std::vector<Contribution> conv2d_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], w = node.inputs[1], dy = dout[0];
  std::vector<Contribution> result(node.inputs.size());
  if (ctx.needs_gradient(x)) {
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{"conv2d_backward_data", {dy, w}, {dx, workspace_like(ctx, node.outputs[1], ".data")},
                  node.attributes, true});
    result[0] = {dx, true};
  }
  if (ctx.needs_gradient(w)) {
    const TensorId dw = ctx.gradient_like(w);
    ctx.emit(Node{"conv2d_backward_filter", {x, dy}, {dw, workspace_like(ctx, node.outputs[1], ".filter")},
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

// inputs x, gamma, beta, running_mean, running_var; outputs y, mean, invstd, workspace. The backward kernel
// reads the activation's derivative off y, so y (needed by the next layer's weight gradient anyway) and x
// stay alive; it writes all three gradients.
std::vector<Contribution> batchnorm_backward(BackwardContext& ctx, const Node& node,
                                             const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], gamma = node.inputs[1], beta = node.inputs[2];
  const TensorId dx = ctx.gradient_like(x), dgamma = ctx.gradient_like(gamma), dbeta = ctx.gradient_like(beta);
  ctx.emit(Node{"batchnorm_backward",
                {dout[0], x, node.outputs[0], gamma, node.outputs[1], node.outputs[2]},
                {dx, dgamma, dbeta, workspace_like(ctx, node.outputs[3], ".backward")},
                node.attributes, true});
  return {{ctx.needs_gradient(x) ? dx : kNoTensor, true}, {dgamma, true}, {dbeta, true}, {}, {}};
}

// Elementwise ops whose backward reads the output y (LeakyReLU with a positive slope, sigmoid).
BackwardRule output_backward(const char* op) {
  return [op](BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    ctx.emit(Node{op, {node.outputs[0], dout[0]}, {dx}, node.attributes, true});
    return std::vector<Contribution>{{dx, true}};
  };
}

std::vector<Contribution> max_pool2d_backward(BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"max_pool2d_backward", {dout[0], node.outputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

std::vector<Contribution> avg_pool2d_backward(BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"avg_pool2d_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// Resizing: the backward node reads only the output gradient (the sizes are attributes).
BackwardRule resize_backward(const char* op) {
  return [op](BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    ctx.emit(Node{op, {dout[0]}, {dx}, node.attributes, true});
    return std::vector<Contribution>{{dx, true}};
  };
}

// One split node writes every part's gradient; parts that need none get a buffer nobody reads.
std::vector<Contribution> concat_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node split{"split", {dout[0]}, {}, node.attributes, true};
  std::vector<Contribution> result;
  for (TensorId part : node.inputs) {
    split.outputs.push_back(ctx.gradient_like(part));
    result.push_back({ctx.needs_gradient(part) ? split.outputs.back() : kNoTensor, true});
  }
  ctx.emit(split);
  return result;
}

// The parts' gradients concatenated; a part that does not reach the loss contributes zeros.
std::vector<Contribution> split_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node concat{"concat", {}, {ctx.gradient_like(node.inputs[0])}, node.attributes, true};
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    TensorId d = dout[k];
    if (d == kNoTensor) {
      d = ctx.gradient_like(node.outputs[k], "_zero");
      ctx.emit(Node{"zero_fill", {}, {d}, {{"n", double(ctx.graph().tensor(d).elements())}}, true});
    }
    concat.inputs.push_back(d);
  }
  ctx.emit(concat);
  return {{concat.outputs[0], true}};
}

// The same samples dropped from dy: the forward's attributes, hence its Philox range this step.
std::vector<Contribution> drop_path_backward(BackwardContext& ctx, const Node& node,
                                             const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"drop_path", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// The loss starts the backward pass (unit gradient by definition): one node writes all three heads'
// gradients from the heads and the ground truth, with a workspace of its own.
std::vector<Contribution> yolo_loss_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
  Node backward{"yolo_loss_backward",
                {node.inputs[0], node.inputs[1], node.inputs[2], node.inputs[3]},
                {},
                node.attributes,
                true};
  std::vector<Contribution> result;
  for (int s = 0; s < 3; ++s) {
    backward.outputs.push_back(ctx.gradient_like(node.inputs[size_t(s)]));
    result.push_back({ctx.needs_gradient(node.inputs[size_t(s)]) ? backward.outputs.back() : kNoTensor, true});
  }
  backward.outputs.push_back(workspace_like(ctx, node.outputs[1], ".backward"));
  ctx.emit(backward);
  result.push_back({});
  return result;
}

}  // namespace

const BackwardRuleTable& cnn_backward_rules() {
  static const BackwardRuleTable table = {
      {"conv2d", conv2d_backward},
      {"batchnorm", batchnorm_backward},
      {"leaky_relu", output_backward("leaky_relu_backward")},
      {"sigmoid", output_backward("sigmoid_backward")},
      {"max_pool2d", max_pool2d_backward},
      {"avg_pool2d", avg_pool2d_backward},
      {"upsample_nearest", resize_backward("upsample_nearest_backward")},
      {"upsample_bilinear", resize_backward("upsample_bilinear_backward")},
      {"concat", concat_backward},
      {"split", split_backward},
      {"drop_path", drop_path_backward},
      {"yolo_loss", yolo_loss_backward},
  };
  return table;
}

}  // namespace sb::detail
