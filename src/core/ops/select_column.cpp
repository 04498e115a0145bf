// The select_column family (src/core/ops/select_column.h): GraphBuilder::select_column, its rule and rows.
#include "src/core/ops/select_column.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const SelectColumnParams& params) {
  return {{"rows", double(params.rows)}, {"cols", double(params.cols)}, {"column", double(params.column)}};
}

SelectColumnParams select_column_params(const Node& node) {
  return {ops::size_attribute(node, "rows"), ops::size_attribute(node, "cols"), ops::size_attribute(node, "column")};
}

TensorId GraphBuilder::select_column(TensorId x, int64_t column) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() < 2 || column < 0 || column >= xs.back()) {
    throw UsageError("select_column: column " + std::to_string(column) + " of " + shape_text(xs));
  }
  TensorId out =
      activation(next_name("column"), std::vector<int64_t>(xs.begin(), xs.end() - 1), graph_.tensor(x).dtype);
  graph_.add_node(Node{"select_column", {x}, {out},
                       encode(SelectColumnParams{ops::product(xs, 0, xs.size() - 1), xs.back(), column}), false});
  return out;
}

namespace {

// The column's gradient in place, zeros elsewhere; a tensor split into several columns gets one such
// contribution per column, summed by autodiff.
std::vector<detail::Contribution> select_column_backward(detail::BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"select_column_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& select_column_ops() {
  static const OpDefs ops = {
      {"select_column", "select_column", OpGradient::kDifferentiable, select_column_backward},
      {"select_column_backward", "select_column", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
