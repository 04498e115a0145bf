// The dropout family: GraphBuilder::dropout, its rule and row. Attributes n (values), p and block_offset (where
// this node's Philox range starts; the executor adds the step's offset). Kernels: src/cpu/dropout.cpp,
// src/cuda/dropout.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"

namespace sb {

TensorId GraphBuilder::dropout(TensorId x, double probability) {
  if (probability < 0 || probability >= 1) throw UsageError("dropout probability must be in [0, 1)");
  if (probability == 0 || !dropout_enabled_) return x;
  x = in_compute_dtype(x);
  const int64_t n = graph_.tensor(x).elements();
  TensorId out = activation(next_name("dropout"), shape(x));

  // Philox blocks of four values: this node's range starts where the previous dropout's ended.
  graph_.add_node(Node{"dropout", {x}, {out},
                       {{"n", double(n)}, {"p", probability}, {"block_offset", double(dropout_blocks_)}}, false});
  dropout_blocks_ += (n + 3) / 4;
  return out;
}

namespace {

// dx = dy masked and scaled by the forward's mask, which is the same dropout applied to dy: same node
// attributes, hence the same Philox range this step. No mask is stored between the passes.
std::vector<detail::Contribution> dropout_backward(detail::BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"dropout", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& dropout_ops() {
  static const OpDefs ops = {
      {"dropout", "dropout", OpGradient::kDifferentiable, dropout_backward},  // its backward is the same dropout
  };
  return ops;
}

}  // namespace sb
