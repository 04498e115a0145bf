// The concat family (src/core/ops/concat.h): GraphBuilder::concat and split, their rules and rows.
#include "src/core/ops/concat.h"

#include <algorithm>
#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const ConcatParams& params) {
  NodeAttributes attributes{{"parts", double(params.widths.size())}, {"rows", double(params.rows)}};
  for (size_t k = 0; k < params.widths.size(); ++k) attributes["w" + std::to_string(k)] = double(params.widths[k]);
  return attributes;
}

ConcatParams concat_params(const Node& node) {
  ConcatParams params;
  params.rows = ops::size_attribute(node, "rows");
  const int64_t parts = ops::size_attribute(node, "parts");
  for (int64_t k = 0; k < parts; ++k) params.widths.push_back(ops::size_attribute(node, ("w" + std::to_string(k)).c_str()));
  return params;
}

TensorId GraphBuilder::concat(const std::vector<TensorId>& given) {
  if (given.empty() || given.size() > kMaxConcatParts) throw UsageError("concat: 1 to 16 parts");
  std::vector<TensorId> parts;
  for (TensorId part : given) parts.push_back(in_compute_dtype(part));
  std::vector<int64_t> shape = graph_.tensor(parts[0]).shape;
  ConcatParams params;
  int64_t width = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const std::vector<int64_t>& ps = graph_.tensor(parts[k]).shape;
    if (ps.size() != shape.size() || !std::equal(ps.begin(), ps.end() - 1, shape.begin())) {
      throw UsageError("concat: part " + shape_text(ps) + " does not match " + shape_text(shape) + " outside the last dimension");
    }
    params.widths.push_back(ps.back());
    width += ps.back();
  }
  params.rows = graph_.tensor(parts[0]).elements() / shape.back();
  shape.back() = width;
  const TensorId y = activation(next_name("concat"), shape);
  graph_.add_node(Node{"concat", parts, {y}, encode(params), false});
  return y;
}

std::vector<TensorId> GraphBuilder::split(TensorId x, const std::vector<int64_t>& widths) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (widths.empty() || widths.size() > kMaxConcatParts) throw UsageError("split: 1 to 16 parts");
  int64_t total = 0;
  std::vector<TensorId> parts;
  for (size_t k = 0; k < widths.size(); ++k) {
    if (widths[k] < 1) throw UsageError("split: widths must be positive");
    total += widths[k];
    std::vector<int64_t> shape = xs;
    shape.back() = widths[k];
    parts.push_back(activation(next_name("split"), shape));
  }
  if (total != xs.back()) {
    throw UsageError("split: widths sum to " + std::to_string(total) + ", the last dimension of " + shape_text(xs) + " is " +
                     std::to_string(xs.back()));
  }
  graph_.add_node(Node{"split", {x}, parts, encode(ConcatParams{graph_.tensor(x).elements() / xs.back(), widths}), false});
  return parts;
}

namespace {

using detail::BackwardContext;
using detail::Contribution;

// One split node writes every part's gradient; parts that need none get a buffer nobody reads.
std::vector<Contribution> concat_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node split{"split", {dout[0]}, {}, node.attributes, true};
  std::vector<Contribution> result;
  for (TensorId part : node.inputs) {
    split.outputs.push_back(ctx.gradient_like(part));
    result.push_back({ctx.needs_gradient(part) ? split.outputs.back() : kNoTensor, true});
  }
  ctx.emit(split);
  return result;
}

// The parts' gradients concatenated; a part that does not reach the loss contributes zeros.
std::vector<Contribution> split_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node concat{"concat", {}, {ctx.gradient_like(node.inputs[0])}, node.attributes, true};
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    TensorId d = dout[k];
    if (d == kNoTensor) {
      d = ctx.gradient_like(node.outputs[k], "_zero");
      ctx.emit(Node{"zero_fill", {}, {d}, {{"n", double(ctx.graph().tensor(d).elements())}}, true});
    }
    concat.inputs.push_back(d);
  }
  ctx.emit(concat);
  return {{concat.outputs[0], true}};
}

}  // namespace

const OpDefs& concat_ops() {
  static const OpDefs ops = {
      {"concat", "concat", OpGradient::kDifferentiable, concat_backward},
      {"split", "concat", OpGradient::kDifferentiable, split_backward},
  };
  return ops;
}

}  // namespace sb
