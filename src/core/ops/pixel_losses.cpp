// The pixel-losses family (src/core/ops/pixel_losses.h): GraphBuilder::mse_loss and l1_loss (pix2pixHD's LSGAN
// and feature-matching losses), their backward rules and their ops' rows. Kernels: src/cpu/pixel_losses.cpp,
// src/cuda/pixel_losses.cu.
#include "src/core/ops/pixel_losses.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::mse_loss(TensorId x, double target) {
  x = in_compute_dtype(x);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  const int64_t n = graph_.tensor(x).elements();
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("mse_loss_workspace"), pixel_loss_workspace_bytes(n));
  graph_.add_node(Node{"mse_loss", {x}, {loss, workspace}, {{"n", double(n)}, {"target", target}}, false});
  return loss;
}

TensorId GraphBuilder::l1_loss(TensorId a, TensorId b) {
  a = in_compute_dtype(a);
  b = in_compute_dtype(b);
  if (graph_.tensor(a).shape != graph_.tensor(b).shape) {
    throw UsageError("l1_loss: operands " + shape_text(graph_.tensor(a).shape) + " and " +
                     shape_text(graph_.tensor(b).shape) + " differ");
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  const int64_t n = graph_.tensor(a).elements();
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("l1_loss_workspace"), pixel_loss_workspace_bytes(n));
  graph_.add_node(Node{"l1_loss", {a, b}, {loss, workspace}, {{"n", double(n)}}, false});
  return loss;
}

namespace {

// The losses start the backward pass (the unit gradient, or its weight in a sum of losses: the node's
// "gradient_weight" attribute, which autodiff sets).
std::vector<detail::Contribution> mse_loss_backward(detail::BackwardContext& ctx, const Node& node,
                                                    const std::vector<TensorId>&) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"mse_loss_backward", {node.inputs[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// One node writes da and, when b needs one (not a detached target), db = -da.
std::vector<detail::Contribution> l1_loss_backward(detail::BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>&) {
  const TensorId a = node.inputs[0], b = node.inputs[1];
  const bool want_b = ctx.needs_gradient(b);
  Node backward{"l1_loss_backward", {a, b}, {ctx.gradient_like(a)}, node.attributes, true};
  if (want_b) backward.outputs.push_back(ctx.gradient_like(b));
  ctx.emit(backward);
  return {{ctx.needs_gradient(a) ? backward.outputs[0] : kNoTensor, true},
          {want_b ? backward.outputs[1] : kNoTensor, true}};
}

}  // namespace

const OpDefs& pixel_losses_ops() {
  static const OpDefs ops = {
      {"mse_loss", "pixel_losses", OpGradient::kDifferentiable, mse_loss_backward, false, kLoss},
      {"l1_loss", "pixel_losses", OpGradient::kDifferentiable, l1_loss_backward, false, kLoss},
      // Loss seeds: backward-only, never differentiated again.
      {"mse_loss_backward", "pixel_losses", OpGradient::kNotDifferentiable, nullptr},
      {"l1_loss_backward", "pixel_losses", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
