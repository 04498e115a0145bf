// The scale_rows family: each row of a (rows, cols) view of x times its fp32 factor (data, no gradient; ConvS2S's
// per-row scaling), its rule (scale_rows again) and row. Kernels: src/cpu/scale_rows.cpp, src/cuda/scale_rows.cu.
#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::scale_rows(TensorId x, TensorId factors) {
  x = in_compute_dtype(x);
  const TensorInfo& fi = graph_.tensor(factors);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (fi.dtype != DType::kFloat32 || fi.role != TensorRole::kInput) {
    throw UsageError("scale_rows: the factors '" + fi.name + "' must be an fp32 input (data, no gradient)");
  }
  if (fi.shape.size() > xs.size() || !std::equal(fi.shape.begin(), fi.shape.end(), xs.begin())) {
    throw UsageError("scale_rows: factors " + shape_text(fi.shape) + " are not the leading dimensions of " + shape_text(xs));
  }
  const int64_t rows = fi.elements(), cols = graph_.tensor(x).elements() / rows;
  const TensorId y = activation(next_name("scale_rows"), xs);
  graph_.add_node(Node{"scale_rows", {x, factors}, {y}, {{"rows", double(rows)}, {"cols", double(cols)}}, false});
  return y;
}

namespace {

// dx = the same row factors applied to dy; the factors are data and take no gradient.
std::vector<detail::Contribution> scale_rows_backward(detail::BackwardContext& ctx, const Node& node,
                                                      const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale_rows", {dout[0], node.inputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}, {kNoTensor, false}};
}

}  // namespace

const OpDefs& scale_rows_ops() {
  static const OpDefs ops = {
      {"scale_rows", "scale_rows", OpGradient::kDifferentiable, scale_rows_backward},  // its backward: scale_rows
  };
  return ops;
}

}  // namespace sb
