// The yolo_loss family (src/core/ops/yolo_loss.h): GraphBuilder::yolo_loss, its rule and rows.
#include "src/core/ops/yolo_loss.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const YoloLossParams& params) {
  return {{"batch", double(params.batch)}, {"boxes", double(params.boxes)}, {"classes", double(params.classes)},
          {"g0", double(params.grid[0])},  {"g1", double(params.grid[1])},  {"g2", double(params.grid[2])}};
}

YoloLossParams yolo_loss_params(const Node& node) {
  YoloLossParams params;
  params.batch = ops::size_attribute(node, "batch");
  params.boxes = ops::size_attribute(node, "boxes");
  params.classes = ops::size_attribute(node, "classes");
  params.grid[0] = ops::size_attribute(node, "g0");
  params.grid[1] = ops::size_attribute(node, "g1");
  params.grid[2] = ops::size_attribute(node, "g2");
  return params;
}

TensorId GraphBuilder::yolo_loss(TensorId head0, TensorId head1, TensorId head2, TensorId truth, int64_t classes) {
  const TensorId heads[3] = {in_compute_dtype(head0), in_compute_dtype(head1), in_compute_dtype(head2)};
  const std::vector<int64_t> ts = graph_.tensor(truth).shape;
  if (classes < 1) throw UsageError("yolo_loss: classes must be >= 1");
  if (ts.size() != 3 || ts[2] != 5 || graph_.tensor(truth).dtype != DType::kFloat32) {
    throw UsageError("yolo_loss: ground truth must be fp32 (N, boxes, 5), got " + shape_text(ts));
  }
  YoloLossParams params;
  params.batch = ts[0], params.boxes = ts[1], params.classes = classes;
  for (int s = 0; s < 3; ++s) {
    const std::vector<int64_t>& hs = graph_.tensor(heads[s]).shape;
    if (hs.size() != 4 || hs[0] != ts[0] || hs[1] != hs[2] || hs[3] != 3 * (5 + classes)) {
      throw UsageError("yolo_loss: head " + std::to_string(s) + " must be (N, G, G, 3 (5 + classes)) = (" +
                       std::to_string(ts[0]) + ", G, G, " + std::to_string(3 * (5 + classes)) + "), got " + shape_text(hs));
    }
    params.grid[s] = hs[1];
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("yolo_workspace"), int64_t(yolo_workspace_bytes(ts[0], params.grid)));
  graph_.add_node(Node{"yolo_loss", {heads[0], heads[1], heads[2], truth}, {loss, workspace}, encode(params), false});
  return loss;
}

namespace {

// The loss starts the backward pass (unit gradient by definition): one node writes all three heads'
// gradients from the heads and the ground truth, with a workspace of its own.
std::vector<detail::Contribution> yolo_loss_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>&) {
  Node backward{"yolo_loss_backward",
                {node.inputs[0], node.inputs[1], node.inputs[2], node.inputs[3]},
                {},
                node.attributes,
                true};
  std::vector<detail::Contribution> result;
  for (int s = 0; s < 3; ++s) {
    backward.outputs.push_back(ctx.gradient_like(node.inputs[size_t(s)]));
    result.push_back({ctx.needs_gradient(node.inputs[size_t(s)]) ? backward.outputs.back() : kNoTensor, true});
  }
  backward.outputs.push_back(ops::workspace_like(ctx, node.outputs[1], ".backward"));
  ctx.emit(backward);
  result.push_back({});
  return result;
}

}  // namespace

const OpDefs& yolo_loss_ops() {
  static const OpDefs ops = {
      {"yolo_loss", "yolo_loss", OpGradient::kDifferentiable, yolo_loss_backward, false, kLoss},
      // The loss's backward op starts the backward pass; nothing differentiates it.
      {"yolo_loss_backward", "yolo_loss", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
