// The reflection-pad family (src/core/ops/reflection_pad.h): GraphBuilder::reflection_pad2d, its backward rule
// and its ops' rows.
#include "src/core/ops/reflection_pad.h"

#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const ReflectionPadParams& p) {
  return {{"batch", double(p.batch)}, {"in_h", double(p.in_h)},   {"in_w", double(p.in_w)},
          {"channels", double(p.channels)}, {"top", double(p.top)}, {"bottom", double(p.bottom)},
          {"left", double(p.left)},   {"right", double(p.right)}};
}

ReflectionPadParams reflection_pad_params(const Node& node) {
  ReflectionPadParams p;
  p.batch = static_cast<int64_t>(ops::attribute(node, "batch"));
  p.in_h = static_cast<int64_t>(ops::attribute(node, "in_h"));
  p.in_w = static_cast<int64_t>(ops::attribute(node, "in_w"));
  p.channels = static_cast<int64_t>(ops::attribute(node, "channels"));
  p.top = static_cast<int64_t>(ops::attribute(node, "top"));
  p.bottom = static_cast<int64_t>(ops::attribute(node, "bottom"));
  p.left = static_cast<int64_t>(ops::attribute(node, "left"));
  p.right = static_cast<int64_t>(ops::attribute(node, "right"));
  return p;
}

TensorId GraphBuilder::reflection_pad2d(TensorId x, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("reflection_pad2d: input must be (N, H, W, C), got " + shape_text(xs));
  if (std::min({top, bottom, left, right}) < 0 || std::max(top, bottom) >= xs[1] || std::max(left, right) >= xs[2]) {
    throw UsageError("reflection_pad2d: pads must be >= 0 and smaller than the extent they mirror, input " +
                     shape_text(xs));
  }
  const ReflectionPadParams params{xs[0], xs[1], xs[2], xs[3], top, bottom, left, right};
  const TensorId y =
      activation(next_name("reflection_pad"), {xs[0], xs[1] + top + bottom, xs[2] + left + right, xs[3]});
  graph_.add_node(Node{"reflection_pad2d", {x}, {y}, encode(params), false});
  return y;
}

namespace {

// dx folds the mirrored border of dy back onto the pixels it copies.
std::vector<detail::Contribution> reflection_pad2d_backward(detail::BackwardContext& ctx, const Node& node,
                                                            const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"reflection_pad2d_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& reflection_pad_ops() {
  static const OpDefs ops = {
      {"reflection_pad2d", "reflection_pad", OpGradient::kDifferentiable, reflection_pad2d_backward},
      {"reflection_pad2d_backward", "reflection_pad", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
