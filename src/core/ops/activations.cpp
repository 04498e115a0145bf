// The activations family: elementwise ops over n values (add, scale, gelu, relu, tanh, leaky_relu, sigmoid and
// their backward ops; add_n, which autodiff emits to sum a tensor's gradients). Their GraphBuilder methods,
// backward rules (the second-order ones of add_n and leaky_relu_backward too: StyleGAN's R1 path) and rows.
// Kernels: src/cpu/activations.cpp, src/cuda/activations.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::add(TensorId a, TensorId b) {
  a = in_compute_dtype(a);
  b = in_compute_dtype(b);
  if (shape(a) != shape(b)) throw UsageError("add: shapes " + shape_text(shape(a)) + " and " + shape_text(shape(b)));
  TensorId out = activation(next_name("add"), shape(a));
  graph_.add_node(Node{"add", {a, b}, {out}, {{"n", double(graph_.tensor(a).elements())}}, false});
  return out;
}

TensorId GraphBuilder::add_losses(TensorId a, TensorId b, double weight_b) {
  if (shape(a) != std::vector<int64_t>{1} || shape(b) != std::vector<int64_t>{1}) {
    throw UsageError("add_losses: both operands must be one-element losses");
  }
  if (!(weight_b > 0)) throw UsageError("add_losses: the weight of the second loss must be > 0");
  TensorId out = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(out).read_after_step = true;
  NodeAttributes attributes{{"n", 1.0}, {"loss_sum", 1.0}};
  if (weight_b != 1.0) attributes["weight_b"] = weight_b;  // a plain sum keeps the plain add kernel
  graph_.add_node(Node{"add", {a, b}, {out}, attributes, false});
  return out;
}

TensorId GraphBuilder::scale(TensorId x, double factor) {
  x = in_compute_dtype(x);
  TensorId out = activation(next_name("scale"), shape(x));
  graph_.add_node(Node{"scale", {x}, {out}, {{"n", double(graph_.tensor(x).elements())}, {"factor", factor}}, false});
  return out;
}

TensorId GraphBuilder::elementwise(const std::string& op, TensorId x) {
  x = in_compute_dtype(x);
  TensorId out = activation(next_name(op), shape(x));
  graph_.add_node(Node{op, {x}, {out}, {{"n", double(graph_.tensor(x).elements())}}, false});
  return out;
}

TensorId GraphBuilder::gelu(TensorId x) { return elementwise("gelu", x); }
TensorId GraphBuilder::relu(TensorId x) { return elementwise("relu", x); }
TensorId GraphBuilder::tanh(TensorId x) { return elementwise("tanh", x); }
TensorId GraphBuilder::sigmoid(TensorId x) { return elementwise("sigmoid", x); }

TensorId GraphBuilder::leaky_relu(TensorId x, double slope) {
  if (!(slope > 0)) throw UsageError("leaky_relu: the slope must be > 0 (the backward pass reads the sign off y)");
  x = in_compute_dtype(x);
  TensorId out = activation(next_name("leaky_relu"), graph_.tensor(x).shape);
  graph_.add_node(
      Node{"leaky_relu", {x}, {out}, {{"n", double(graph_.tensor(x).elements())}, {"slope", slope}}, false});
  return out;
}

namespace {

using detail::BackwardContext;
using detail::BackwardRule;
using detail::Contribution;

std::vector<Contribution> add_backward(BackwardContext&, const Node&, const std::vector<TensorId>& dout) {
  return {{dout[0], false}, {dout[0], false}};
}

std::vector<Contribution> scale_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// Elementwise activations (an activation's input always needs its gradient when the output does, except for
// a data input, which no workload feeds straight into one): the backward kernel reads the forward input (gelu)
// or output (relu, tanh, and LeakyReLU with a positive slope, sigmoid), whichever the kernel documents, so only
// that tensor stays alive until the backward pass.
BackwardRule activation_backward(const char* op, bool needs_output) {
  return [op, needs_output](BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    const TensorId saved = needs_output ? node.outputs[0] : node.inputs[0];
    ctx.emit(Node{op, {saved, dout[0]}, {dx}, node.attributes, true});
    return std::vector<Contribution>{{dx, true}};
  };
}

// Second order (backward_rule.h, R1): add_n passes u to every term; leaky_relu_backward(y, dy) = mask(y) dy with
// the mask piecewise constant, so d dy = mask(y) u and d y = 0.
std::vector<Contribution> add_n_rule(BackwardContext&, const Node& node, const std::vector<TensorId>& dout) {
  return std::vector<Contribution>(node.inputs.size(), Contribution{dout[0], false});
}

std::vector<Contribution> leaky_relu_backward_rule(BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>& dout) {
  const TensorId ddy = ctx.gradient_like(node.inputs[1]);
  ctx.emit(Node{"leaky_relu_backward", {node.inputs[0], dout[0]}, {ddy}, node.attributes});
  return {{kNoTensor, false}, {ddy, true}};
}

}  // namespace

const OpDefs& activations_ops() {
  constexpr OpGradient kDiff = OpGradient::kDifferentiable, kNone = OpGradient::kNotDifferentiable;
  static const OpDefs ops = {
      // Elementwise sums and scales live with the activations' kernels.
      {"add", "activations", kDiff, add_backward},
      {"scale", "activations", kDiff, scale_backward},
      {"gelu", "activations", kDiff, activation_backward("gelu_backward", false)},
      {"relu", "activations", kDiff, activation_backward("relu_backward", true)},
      {"tanh", "activations", kDiff, activation_backward("tanh_backward", true)},
      {"leaky_relu", "activations", kDiff, activation_backward("leaky_relu_backward", true)},
      {"sigmoid", "activations", kDiff, activation_backward("sigmoid_backward", true)},
      {"add_n", "activations", kDiff, add_n_rule},
      {"leaky_relu_backward", "activations", kDiff, leaky_relu_backward_rule},
      {"gelu_backward", "activations", kNone, nullptr},
      {"relu_backward", "activations", kNone, nullptr},
      {"tanh_backward", "activations", kNone, nullptr},
      {"sigmoid_backward", "activations", kNone, nullptr},
  };
  return ops;
}

}  // namespace sb
