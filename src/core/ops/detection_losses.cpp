// The detection-losses family (src/core/ops/detection_losses.h): GraphBuilder::bce_with_logits_loss and
// smooth_l1_loss, their backward rules and their ops' rows. Kernels: src/cpu/detection_losses.cpp,
// src/cuda/detection_losses.cu.
#include "src/core/ops/detection_losses.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_checks.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const ClassSelection& s) {
  return {{"groups", double(s.groups)}, {"rows", double(s.rows)}, {"classes", double(s.classes)},
          {"inner", double(s.inner)}};
}

namespace {

// The ClassSelection of a loss over x, targets, weights (and columns), checked.
ClassSelection class_selection(const Graph& graph, TensorId x, TensorId targets, TensorId weights,
                               const ClassColumns& selection, const std::string& op) {
  const TensorInfo& xi = graph.tensor(x);
  const TensorInfo& ti = graph.tensor(targets);
  const TensorInfo& wi = graph.tensor(weights);
  ops::require_dtype(ti, DType::kFloat32, op);
  ops::require_dtype(wi, DType::kFloat32, op);
  if (ti.elements() != wi.elements()) {
    throw UsageError(op + ": targets " + shape_text(ti.shape) + " and weights " + shape_text(wi.shape) + " differ in size");
  }
  int64_t groups = ti.elements(), rows = 1, classes = 1, inner = 1;
  if (selection.columns != kNoTensor) {
    const TensorInfo& ci = graph.tensor(selection.columns);
    ops::require_dtype(ci, DType::kInt32, op);
    groups = ci.elements(), classes = selection.classes, inner = selection.inner;
    if (classes < 1 || inner < 1 || ti.elements() % (groups * inner) != 0) {
      throw UsageError(op + ": targets " + shape_text(ti.shape) + " are not (" + std::to_string(groups) + ", rows, " +
                       std::to_string(inner) + ")");
    }
    rows = ti.elements() / (groups * inner);
  }
  if (xi.elements() != groups * rows * classes * inner) {
    throw UsageError(op + ": x " + shape_text(xi.shape) + " is not (" + std::to_string(groups) + ", " +
                     std::to_string(rows) + ", " + std::to_string(classes) + ", " + std::to_string(inner) + ")");
  }
  return ClassSelection{groups, rows, classes, inner};
}

}  // namespace

TensorId GraphBuilder::bce_with_logits_loss(TensorId x, TensorId targets, TensorId weights,
                                            const ClassColumns& selection) {
  x = in_compute_dtype(x);
  Node node{"bce_with_logits_loss", {x, targets, weights}, {},
            encode(class_selection(graph_, x, targets, weights, selection, "bce_with_logits_loss")), false};
  if (selection.columns != kNoTensor) node.inputs.push_back(selection.columns);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  node.outputs.push_back(loss);
  graph_.add_node(node);
  return loss;
}

TensorId GraphBuilder::smooth_l1_loss(TensorId x, TensorId targets, TensorId weights, double beta,
                                      const ClassColumns& selection) {
  if (!(beta > 0)) throw UsageError("smooth_l1_loss: beta must be > 0");
  x = in_compute_dtype(x);
  Node node{"smooth_l1_loss", {x, targets, weights}, {},
            encode(class_selection(graph_, x, targets, weights, selection, "smooth_l1_loss")), false};
  node.attributes["beta"] = beta;
  if (selection.columns != kNoTensor) node.inputs.push_back(selection.columns);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  node.outputs.push_back(loss);
  graph_.add_node(node);
  return loss;
}

namespace {

// Losses start the backward pass (the unit gradient, times gradient_weight inside a weighted sum).
detail::BackwardRule loss_backward(const char* op) {
  return [op](detail::BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
    std::vector<detail::Contribution> result(node.inputs.size());
    const TensorId x = node.inputs[0];
    if (!ctx.needs_gradient(x)) return result;
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{op, node.inputs, {dx}, node.attributes, true});
    result[0] = {dx, true};
    return result;
  };
}

}  // namespace

const OpDefs& detection_losses_ops() {
  static const OpDefs ops = {
      {"bce_with_logits_loss", "detection_losses", OpGradient::kDifferentiable,
       loss_backward("bce_with_logits_loss_backward"), false, kLoss},
      {"smooth_l1_loss", "detection_losses", OpGradient::kDifferentiable, loss_backward("smooth_l1_loss_backward"),
       false, kLoss},
      // Loss seeds: backward-only, never differentiated again.
      {"bce_with_logits_loss_backward", "detection_losses", OpGradient::kNotDifferentiable, nullptr},
      {"smooth_l1_loss_backward", "detection_losses", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
