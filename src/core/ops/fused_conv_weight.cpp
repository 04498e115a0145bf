// The fused-conv-weight family (src/core/ops/fused_conv_weight.h): GraphBuilder::fused_conv_weight, its backward
// rule and its ops' rows.
#include "src/core/ops/fused_conv_weight.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const FusedConvWeightParams& p) {
  return {{"out_channels", double(p.out_channels)}, {"in_channels", double(p.in_channels)}, {"factor", p.factor}};
}

FusedConvWeightParams fused_conv_weight_params(const Node& node) {
  FusedConvWeightParams p;
  p.out_channels = static_cast<int64_t>(ops::attribute(node, "out_channels"));
  p.in_channels = static_cast<int64_t>(ops::attribute(node, "in_channels"));
  p.factor = ops::attribute(node, "factor");
  return p;
}

TensorId GraphBuilder::fused_conv_weight(TensorId weight3x3, bool downsample) {
  const std::vector<int64_t> ws = shape(weight3x3);
  if (ws.size() != 4 || ws[1] != 3 || ws[2] != 3) {
    throw UsageError("fused_conv_weight: the weight must be (K, 3, 3, C), got " + shape_text(ws));
  }
  const TensorId w4 = activation(next_name("fused_weight"), {ws[0], 4, 4, ws[3]}, graph_.tensor(weight3x3).dtype);
  const FusedConvWeightParams params{ws[0], ws[3], downsample ? 0.25 : 1.0};
  graph_.add_node(Node{"fused_conv_weight", {weight3x3}, {w4}, encode(params), false});
  return w4;
}

namespace {

// The map is linear: dw (K, 3, 3, C) gathers dw4 back over the same four shifts.
std::vector<detail::Contribution> fused_conv_weight_rule(detail::BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>& dout) {
  const TensorId dw = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"fused_conv_weight_backward", {dout[0]}, {dw}, node.attributes});
  return {{dw, true}};
}

}  // namespace

const OpDefs& fused_conv_weight_ops() {
  static const OpDefs ops = {
      {"fused_conv_weight", "fused_conv_weight", OpGradient::kDifferentiable, fused_conv_weight_rule},
      {"fused_conv_weight_backward", "fused_conv_weight", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
