// The layernorm family: GraphBuilder::layernorm over the last dimension (attributes rows, cols, epsilon; fp32
// mean and rstd per row saved for the backward pass), its rule and rows. Kernels: src/cpu/layernorm.cpp,
// src/cuda/layernorm.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

TensorId GraphBuilder::layernorm(TensorId x, TensorId gamma, TensorId beta, double epsilon) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> feature{xs.back()};
  if (shape(gamma) != feature || shape(beta) != feature) throw UsageError("layernorm: gamma/beta must be (features)");
  const int64_t rows = ops::product(xs, 0, xs.size() - 1);
  TensorId out = activation(next_name("layernorm"), xs);
  TensorId mean = activation(next_name("layernorm_mean"), {rows}, DType::kFloat32);
  TensorId rstd = activation(next_name("layernorm_rstd"), {rows}, DType::kFloat32);
  graph_.add_node(Node{"layernorm", {x, gamma, beta}, {out, mean, rstd},
                       {{"rows", double(rows)}, {"cols", double(xs.back())}, {"epsilon", epsilon}}, false});
  return out;
}

namespace {

std::vector<detail::Contribution> layernorm_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], gamma = node.inputs[1], beta = node.inputs[2];
  const TensorId dx = ctx.gradient_like(x), dgamma = ctx.gradient_like(gamma), dbeta = ctx.gradient_like(beta);
  ctx.emit(Node{"layernorm_backward", {dout[0], x, gamma, node.outputs[1], node.outputs[2]}, {dx, dgamma, dbeta},
                node.attributes, true});
  return {{dx, true}, {dgamma, true}, {dbeta, true}};
}

}  // namespace

const OpDefs& layernorm_ops() {
  static const OpDefs ops = {
      {"layernorm", "layernorm", OpGradient::kDifferentiable, layernorm_backward},
      {"layernorm_backward", "layernorm", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
