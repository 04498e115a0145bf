// The pixel-norm family: StyleGAN's pixelwise feature normalisation over the last dimension (x / sqrt(mean(x²) +
// eps) per row), GraphBuilder::pixel_norm, its backward rule and its ops' rows. The nodes carry two sizes ("rows",
// "cols"), so no params struct. Kernels: src/cpu/pixel_norm.cpp, src/cuda/pixel_norm.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::pixel_norm(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() < 2) throw UsageError("pixel_norm: input must be (rows, C), got " + shape_text(xs));
  const TensorId y = activation(next_name("pixel_norm"), xs);
  graph_.add_node(Node{"pixel_norm", {x}, {y},
                       {{"rows", double(graph_.tensor(x).elements() / xs.back())}, {"cols", double(xs.back())}},
                       false});
  return y;
}

namespace {

// dx from x and dy (the row's norm is recomputed, not kept).
std::vector<detail::Contribution> pixel_norm_rule(detail::BackwardContext& ctx, const Node& node,
                                                  const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"pixel_norm_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

}  // namespace

const OpDefs& pixel_norm_ops() {
  static const OpDefs ops = {
      {"pixel_norm", "pixel_norm", OpGradient::kDifferentiable, pixel_norm_rule},
      {"pixel_norm_backward", "pixel_norm", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
