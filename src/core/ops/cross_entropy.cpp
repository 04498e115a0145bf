// The cross_entropy family (src/core/ops/cross_entropy.h): GraphBuilder::softmax_cross_entropy, its rule, rows.
#include "src/core/ops/cross_entropy.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const CrossEntropyParams& params) {
  return {{"rows", double(params.rows)}, {"classes", double(params.classes)},
          {"label_smoothing", params.label_smoothing}, {"ignore_index", double(params.ignore_index)}};
}

CrossEntropyParams cross_entropy_params(const Node& node) {
  return {ops::size_attribute(node, "rows"), ops::size_attribute(node, "classes"),
          ops::attribute(node, "label_smoothing"), ops::size_attribute(node, "ignore_index")};
}

TensorId GraphBuilder::softmax_cross_entropy(TensorId logits, TensorId targets, double label_smoothing,
                                             int64_t ignore_index) {
  logits = in_compute_dtype(logits);
  const std::vector<int64_t> ls = shape(logits);
  const int64_t rows = ops::product(ls, 0, ls.size() - 1);
  if (graph_.tensor(targets).dtype != DType::kInt32 || graph_.tensor(targets).elements() != rows) {
    throw UsageError("softmax_cross_entropy: targets must be int32 with one entry per logits row");
  }
  TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  TensorId logsumexp = activation(next_name("logsumexp"), {rows}, DType::kFloat32);
  TensorId row_losses = activation(next_name("row_losses"), {rows}, DType::kFloat32);
  graph_.add_node(Node{"softmax_cross_entropy", {logits, targets}, {loss, logsumexp, row_losses},
                       encode(CrossEntropyParams{rows, ls.back(), label_smoothing, ignore_index}), false});
  return loss;
}

namespace {

// The loss is where the backward pass starts: its incoming gradient is 1 by definition, so the rule
// ignores dout and the kernel scales by 1 / (rows that count) itself.
std::vector<detail::Contribution> cross_entropy_backward(detail::BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>&) {
  const TensorId dlogits = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"softmax_cross_entropy_backward", {node.inputs[0], node.inputs[1], node.outputs[1]}, {dlogits},
                node.attributes, true});
  return {{dlogits, true}, {kNoTensor, false}};
}

}  // namespace

const OpDefs& cross_entropy_ops() {
  static const OpDefs ops = {
      {"softmax_cross_entropy", "cross_entropy", OpGradient::kDifferentiable, cross_entropy_backward, false, kLoss},
      // A loss's backward op starts the backward pass; nothing differentiates a loss's gradient.
      {"softmax_cross_entropy_backward", "cross_entropy", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
