// The blur family (blur2d): StyleGAN's fixed [1, 2, 1] ⊗ [1, 2, 1] / 16 filter per channel, GraphBuilder::blur2d,
// its backward rule and its op's row. The node carries the map's extent (ImageParams, src/core/ops/image_params.h).
// Kernels: src/cpu/blur.cpp, src/cuda/blur.cu.
#include "scalebench/graph_builder.h"
#include "src/core/ops/image_params.h"
#include "src/core/ops/op_registry.h"

namespace sb {

TensorId GraphBuilder::blur2d(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc_shape(graph_, x, "blur2d");
  const TensorId y = activation(next_name("blur"), xs);
  graph_.add_node(Node{"blur2d", {x}, {y}, encode(image_params(xs)), false});
  return y;
}

namespace {

// The filter is symmetric, so blur2d is self-adjoint: dx is blur2d(dy), and the rule of that node is this one
// again (StyleGAN's R1 path differentiates it twice).
std::vector<detail::Contribution> blur2d_rule(detail::BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"blur2d", {dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

}  // namespace

const OpDefs& blur_ops() {
  static const OpDefs ops = {
      {"blur2d", "blur", OpGradient::kDifferentiable, blur2d_rule},
  };
  return ops;
}

}  // namespace sb
