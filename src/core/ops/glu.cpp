// The glu family: GLU over the last dimension, (rows, 2 · cols) -> (rows, cols) (attributes rows, cols), its rule
// and rows. Kernels: src/cpu/glu.cpp, src/cuda/glu.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::glu(TensorId x) {
  x = in_compute_dtype(x);
  std::vector<int64_t> shape = graph_.tensor(x).shape;
  if (shape.empty() || shape.back() < 2 || shape.back() % 2 != 0) {
    throw UsageError("glu: the last dimension must be even (two halves), got " + shape_text(shape));
  }
  const int64_t half = shape.back() / 2;
  const int64_t rows = graph_.tensor(x).elements() / shape.back();
  shape.back() = half;
  const TensorId y = activation(next_name("glu"), shape);
  graph_.add_node(Node{"glu", {x}, {y}, {{"rows", double(rows)}, {"cols", double(half)}}, false});
  return y;
}

namespace {

// dx (rows, 2 · cols) from the forward input x and dy.
std::vector<detail::Contribution> glu_backward(detail::BackwardContext& ctx, const Node& node,
                                               const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"glu_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& glu_ops() {
  static const OpDefs ops = {
      {"glu", "glu", OpGradient::kDifferentiable, glu_backward},
      {"glu_backward", "glu", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
