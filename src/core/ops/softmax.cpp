// The softmax family (src/core/ops/softmax.h): GraphBuilder::masked_softmax, its rule and rows.
#include "src/core/ops/softmax.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const MaskedSoftmaxParams& params) {
  return {{"batch", double(params.batch)}, {"heads", double(params.heads)}, {"q", double(params.q)},
          {"k", double(params.k)}, {"scale", params.scale}, {"causal", params.causal ? 1.0 : 0.0}};
}

MaskedSoftmaxParams masked_softmax_params(const Node& node) {
  MaskedSoftmaxParams params;
  params.batch = ops::size_attribute(node, "batch");
  params.heads = ops::size_attribute(node, "heads");
  params.q = ops::size_attribute(node, "q");
  params.k = ops::size_attribute(node, "k");
  params.scale = ops::attribute(node, "scale");
  params.causal = ops::attribute(node, "causal") != 0;
  return params;
}

TensorId GraphBuilder::masked_softmax(TensorId scores, double scale, TensorId key_lengths, bool causal) {
  scores = in_compute_dtype(scores);
  const std::vector<int64_t> s = shape(scores);
  if (s.size() != 4) throw UsageError("masked_softmax: scores must be (batch, heads, q, k)");
  if (key_lengths != kNoTensor &&
      (graph_.tensor(key_lengths).dtype != DType::kInt32 || shape(key_lengths) != std::vector<int64_t>{s[0]})) {
    throw UsageError("masked_softmax: key_lengths must be int32 (batch)");
  }
  TensorId out = activation(next_name("softmax"), s);
  std::vector<TensorId> inputs{scores};
  if (key_lengths != kNoTensor) inputs.push_back(key_lengths);
  graph_.add_node(Node{"masked_softmax", inputs, {out},
                       encode(MaskedSoftmaxParams{s[0], s[1], s[2], s[3], scale, causal}), false});
  return out;
}

namespace {

std::vector<detail::Contribution> masked_softmax_backward(detail::BackwardContext& ctx, const Node& node,
                                                          const std::vector<TensorId>& dout) {
  const TensorId dscores = ctx.gradient_like(node.inputs[0]);
  std::vector<TensorId> inputs{node.outputs[0], dout[0]};
  if (node.inputs.size() > 1) inputs.push_back(node.inputs[1]);  // key lengths
  ctx.emit(Node{"masked_softmax_backward", inputs, {dscores}, node.attributes, true});
  std::vector<detail::Contribution> result{{dscores, true}};
  if (node.inputs.size() > 1) result.push_back({kNoTensor, false});
  return result;
}

}  // namespace

const OpDefs& softmax_ops() {
  static const OpDefs ops = {
      {"masked_softmax", "softmax", OpGradient::kDifferentiable, masked_softmax_backward},
      {"masked_softmax_backward", "softmax", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
