// The style-modulation family (src/core/ops/style_modulation.h): GraphBuilder::style_modulation, its backward
// rule and its ops' rows. Kernels: src/cpu/style_modulation.cpp, src/cuda/stylegan_g_ops.cu.
#include "src/core/ops/style_modulation.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/image_params.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const StyleModulationParams& p) {
  return {{"batch", double(p.batch)}, {"pixels", double(p.pixels)}, {"channels", double(p.channels)}};
}

StyleModulationParams style_modulation_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "pixels")),
          static_cast<int64_t>(ops::attribute(node, "channels"))};
}

TensorId GraphBuilder::style_modulation(TensorId x, TensorId style) {
  x = in_compute_dtype(x);
  style = in_compute_dtype(style);
  const std::vector<int64_t> xs = nhwc_shape(graph_, x, "style_modulation");
  if (shape(style) != std::vector<int64_t>{xs[0], 2 * xs[3]}) {
    throw UsageError("style_modulation: style " + shape_text(shape(style)) + " must be (N, 2C) for " + shape_text(xs));
  }
  const TensorId y = activation(next_name("style_mod"), xs);
  graph_.add_node(Node{"style_modulation", {x, style}, {y}, encode(StyleModulationParams{xs[0], xs[1] * xs[2], xs[3]}),
                       false});
  return y;
}

namespace {

// One node writes dx and dstyle (dstyle's per-chunk partial sums in a scratch of its own).
std::vector<detail::Contribution> style_modulation_rule(detail::BackwardContext& ctx, const Node& node,
                                                        const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]), dstyle = ctx.gradient_like(node.inputs[1]);
  const StyleModulationParams p = style_modulation_params(node);
  const TensorId workspace = ops::workspace_tensor(ctx.graph(), ctx.graph().tensor(dstyle).name + ".partials",
                                                   style_modulation_workspace_bytes(p.batch, p.pixels, p.channels));
  ctx.emit(Node{"style_modulation_backward", {node.inputs[0], node.inputs[1], dout[0]}, {dx, dstyle, workspace},
                node.attributes});
  return {{ctx.needs_gradient(node.inputs[0]) ? dx : kNoTensor, true}, {dstyle, true}};
}

}  // namespace

const OpDefs& style_modulation_ops() {
  static const OpDefs ops = {
      {"style_modulation", "style_modulation", OpGradient::kDifferentiable, style_modulation_rule},
      {"style_modulation_backward", "style_modulation", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
