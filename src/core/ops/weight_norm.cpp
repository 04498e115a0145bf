// The weight_norm family: w = g · v / ||v|| per row of v (attributes rows, cols; the row norms saved for the
// backward pass), its rule and rows. Kernels: src/cpu/weight_norm.cpp, src/cuda/weight_norm.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::weight_norm(TensorId v, TensorId g) {
  const TensorInfo& vi = graph_.tensor(v);
  const TensorInfo& gi = graph_.tensor(g);
  if (vi.dtype != DType::kFloat32 || gi.dtype != DType::kFloat32) {
    throw UsageError("weight_norm: v and g must be fp32 (parameters), got '" + vi.name + "' " +
                     dtype_name(vi.dtype) + " and '" + gi.name + "' " + dtype_name(gi.dtype));
  }
  const std::vector<int64_t> vs = vi.shape;
  if (vs.size() < 2 || gi.shape != std::vector<int64_t>{vs[0]}) {
    throw UsageError("weight_norm: v must be (rows, ...) and g (rows), got " + shape_text(vs) + " and " + shape_text(gi.shape));
  }
  const int64_t rows = vs[0], cols = vi.elements() / rows;
  const std::string name = vi.name + ".normalized";
  const TensorId w = activation(name, vs, DType::kFloat32);
  const TensorId norms = activation(name + "_norms", {rows}, DType::kFloat32);
  graph_.add_node(Node{"weight_norm", {v, g}, {w, norms}, {{"rows", double(rows)}, {"cols", double(cols)}}, false});
  return w;
}

namespace {

// inputs v, g; outputs w, norms. One node writes both parameters' gradients from dw, v, g and the norms.
std::vector<detail::Contribution> weight_norm_backward(detail::BackwardContext& ctx, const Node& node,
                                                       const std::vector<TensorId>& dout) {
  const TensorId v = node.inputs[0], g = node.inputs[1];
  const TensorId dv = ctx.gradient_like(v), dg = ctx.gradient_like(g);
  ctx.emit(Node{"weight_norm_backward", {dout[0], v, g, node.outputs[1]}, {dv, dg}, node.attributes, true});
  return {{ctx.needs_gradient(v) ? dv : kNoTensor, true}, {ctx.needs_gradient(g) ? dg : kNoTensor, true}};
}

}  // namespace

const OpDefs& weight_norm_ops() {
  static const OpDefs ops = {
      {"weight_norm", "weight_norm", OpGradient::kDifferentiable, weight_norm_backward},
      {"weight_norm_backward", "weight_norm", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
