// The frozen-affine family (src/core/ops/frozen_affine.h): GraphBuilder::frozen_affine, its backward rule and its
// ops' rows.
#include "src/core/ops/frozen_affine.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_checks.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const FrozenAffineParams& p) {
  return {{"rows", double(p.rows)}, {"channels", double(p.channels)}, {"relu", p.relu ? 1.0 : 0.0}};
}

FrozenAffineParams frozen_affine_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "rows")), static_cast<int64_t>(ops::attribute(node, "channels")),
          ops::attribute(node, "relu") != 0};
}

TensorId GraphBuilder::frozen_affine(TensorId x, TensorId scale, TensorId shift, bool relu) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.empty()) throw UsageError("frozen_affine: x must have a channel dimension");
  const int64_t channels = xs.back();
  for (TensorId t : {scale, shift}) {
    const TensorInfo& info = graph_.tensor(t);
    ops::require_dtype(info, DType::kFloat32, "frozen_affine");
    ops::require_shape(info, {channels}, "frozen_affine");
    if (info.role != TensorRole::kInput) throw UsageError("frozen_affine: '" + info.name + "' must be an input (frozen)");
  }
  const TensorId y = activation(next_name("frozen_affine"), xs);
  const FrozenAffineParams params{graph_.tensor(x).elements() / channels, channels, relu};
  graph_.add_node(Node{"frozen_affine", {x, scale, shift}, {y}, encode(params), false});
  return y;
}

namespace {

// dx = dy · scale (masked by the fused ReLU's output); nothing for the frozen scale and shift.
std::vector<detail::Contribution> frozen_affine_backward(detail::BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0];
  if (!ctx.needs_gradient(x)) return {{}, {}, {}};
  const TensorId dx = ctx.gradient_like(x);
  ctx.emit(Node{"frozen_affine_backward", {dout[0], node.outputs[0], node.inputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}, {}, {}};
}

}  // namespace

const OpDefs& frozen_affine_ops() {
  static const OpDefs ops = {
      {"frozen_affine", "frozen_affine", OpGradient::kDifferentiable, frozen_affine_backward},
      {"frozen_affine_backward", "frozen_affine", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
