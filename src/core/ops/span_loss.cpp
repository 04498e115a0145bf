// The span_loss family: BERT SQuAD's start/end loss over (batch, seq) logits (attributes batch, seq), its rule
// and rows. Kernels: src/cpu/span_loss.cpp, src/cuda/span_loss.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::span_loss(TensorId start_logits, TensorId end_logits, TensorId start_positions,
                                 TensorId end_positions) {
  start_logits = in_compute_dtype(start_logits);
  end_logits = in_compute_dtype(end_logits);
  const std::vector<int64_t> ss = shape(start_logits);
  if (ss.size() != 2 || shape(end_logits) != ss) {
    throw UsageError("span_loss: start and end logits must both be (batch, seq), got " + shape_text(ss) + " and " +
                     shape_text(shape(end_logits)));
  }
  for (TensorId positions : {start_positions, end_positions}) {
    if (graph_.tensor(positions).dtype != DType::kInt32 || shape(positions) != std::vector<int64_t>{ss[0]}) {
      throw UsageError("span_loss: start and end positions must be int32 (batch)");
    }
  }
  // The loss and its statistics are fp32 whatever the logits' element type (the kernels' convention).
  TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  TensorId logsumexp = activation(next_name("span_logsumexp"), {2, ss[0]}, DType::kFloat32);
  TensorId row_losses = activation(next_name("span_row_losses"), {2, ss[0]}, DType::kFloat32);
  graph_.add_node(Node{"span_loss", {start_logits, end_logits, start_positions, end_positions},
                       {loss, logsumexp, row_losses}, {{"batch", double(ss[0])}, {"seq", double(ss[1])}}, false});
  return loss;
}

namespace {

// As for cross-entropy, the span loss starts the backward pass with the unit gradient (dloss = 1 in the
// kernel). The kernel writes both logits' gradients, so both tensors exist even where one is not needed.
std::vector<detail::Contribution> span_loss_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>&) {
  const TensorId start = node.inputs[0], end = node.inputs[1];
  const TensorId dstart = ctx.gradient_like(start), dend = ctx.gradient_like(end);
  ctx.emit(Node{"span_loss_backward", {start, end, node.inputs[2], node.inputs[3], node.outputs[1]}, {dstart, dend},
                node.attributes, true});
  return {{ctx.needs_gradient(start) ? dstart : kNoTensor, true},
          {ctx.needs_gradient(end) ? dend : kNoTensor, true},
          {kNoTensor, false},
          {kNoTensor, false}};
}

}  // namespace

const OpDefs& span_loss_ops() {
  static const OpDefs ops = {
      {"span_loss", "span_loss", OpGradient::kDifferentiable, span_loss_backward, false, kLoss},
      {"span_loss_backward", "span_loss", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
