// The layout family (src/core/ops/layout.h): GraphBuilder::add_broadcast and swap_middle, their rules and rows.
#include "src/core/ops/layout.h"

#include <algorithm>
#include <utility>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const SwapMiddleParams& params) {
  return {{"a", double(params.a)}, {"b", double(params.b)}, {"c", double(params.c)}, {"d", double(params.d)}};
}

SwapMiddleParams swap_middle_params(const Node& node) {
  return {ops::size_attribute(node, "a"), ops::size_attribute(node, "b"), ops::size_attribute(node, "c"),
          ops::size_attribute(node, "d")};
}

TensorId GraphBuilder::add_broadcast(TensorId x, TensorId table) {
  x = in_compute_dtype(x);
  table = converted(table, DType::kFloat32);  // the kernel reads the table as fp32 (a parameter or a lookup)
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> ts = shape(table);
  if (ts.size() > xs.size() || !std::equal(ts.rbegin(), ts.rend(), xs.rbegin())) {
    throw UsageError("add_broadcast: " + shape_text(ts) + " is not a trailing block of " + shape_text(xs));
  }
  const int64_t block = graph_.tensor(table).elements();
  TensorId out = activation(next_name("add_broadcast"), xs);
  graph_.add_node(Node{"add_broadcast", {x, table}, {out},
                       {{"repeats", double(graph_.tensor(x).elements() / block)}, {"block", double(block)}}, false});
  return out;
}

TensorId GraphBuilder::swap_middle(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() != 4) throw UsageError("swap_middle: needs a 4-dimensional tensor, got " + shape_text(xs));
  TensorId out = activation(next_name("swap"), {xs[0], xs[2], xs[1], xs[3]});
  graph_.add_node(Node{"swap_middle", {x}, {out}, encode(SwapMiddleParams{xs[0], xs[1], xs[2], xs[3]}), false});
  return out;
}

namespace {

using detail::BackwardContext;
using detail::Contribution;

// The table's gradient sums the output gradient over the repeats (a column sum, as for a bias).
std::vector<Contribution> add_broadcast_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  TensorId dtable = kNoTensor;
  if (ctx.needs_gradient(node.inputs[1])) {
    dtable = ctx.gradient_like(node.inputs[1]);
    ctx.emit(Node{"bias_backward", {dout[0]}, {dtable},
                  {{"rows", node.attributes.at("repeats")}, {"cols", node.attributes.at("block")}}, true});
  }
  return {{dout[0], false}, {dtable, true}};
}

// Swapping the middle dimensions of (a, c, b, d) restores (a, b, c, d).
std::vector<Contribution> swap_middle_backward(BackwardContext& ctx, const Node& node,
                                               const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  SwapMiddleParams swapped = swap_middle_params(node);
  std::swap(swapped.b, swapped.c);
  ctx.emit(Node{"swap_middle", {dout[0]}, {dx}, encode(swapped), true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& layout_ops() {
  static const OpDefs ops = {
      {"add_broadcast", "layout", OpGradient::kDifferentiable, add_broadcast_backward},
      {"swap_middle", "layout", OpGradient::kDifferentiable, swap_middle_backward},
  };
  return ops;
}

}  // namespace sb
