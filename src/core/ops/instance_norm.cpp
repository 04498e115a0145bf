// The instance-norm family (src/core/ops/instance_norm.h): GraphBuilder::instance_norm, its backward rule and
// its ops' rows. Kernels: src/cpu/instance_norm.cpp, src/cuda/instance_norm.cu.
#include "src/core/ops/instance_norm.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const InstanceNormParams& params) {
  return {{"batch", double(params.batch)}, {"pixels", double(params.pixels)}, {"channels", double(params.channels)},
          {"epsilon", params.epsilon}};
}

InstanceNormParams instance_norm_params(const Node& node) {
  InstanceNormParams params;
  params.batch = static_cast<int64_t>(ops::attribute(node, "batch"));
  params.pixels = static_cast<int64_t>(ops::attribute(node, "pixels"));
  params.channels = static_cast<int64_t>(ops::attribute(node, "channels"));
  params.epsilon = ops::attribute(node, "epsilon");
  return params;
}

TensorId GraphBuilder::instance_norm(TensorId x, double epsilon) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("instance_norm: input must be (N, H, W, C), got " + shape_text(xs));
  if (xs[1] * xs[2] < 2) {
    throw UsageError("instance_norm: needs more than one pixel per channel (PyTorch refuses it too), got " +
                     shape_text(xs));
  }
  if (!(epsilon > 0)) throw UsageError("instance_norm: epsilon must be > 0");
  const InstanceNormParams params{xs[0], xs[1] * xs[2], xs[3], epsilon};
  const TensorId y = activation(next_name("instance_norm"), xs);
  const TensorId mean = activation(next_name("instance_norm_mean"), {params.batch, params.channels}, DType::kFloat32);
  const TensorId invstd =
      activation(next_name("instance_norm_invstd"), {params.batch, params.channels}, DType::kFloat32);
  const TensorId workspace =
      ops::workspace_tensor(graph_, next_name("instance_norm_workspace"),
                            instance_norm_workspace_bytes(params.batch, params.pixels, params.channels));
  graph_.add_node(Node{"instance_norm", {x}, {y, mean, invstd, workspace}, encode(params), false});
  return y;
}

namespace {

// inputs x; outputs y, mean, invstd, workspace. dx from dy, x and the saved statistics.
std::vector<detail::Contribution> instance_norm_backward(detail::BackwardContext& ctx, const Node& node,
                                                         const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"instance_norm_backward",
                {dout[0], node.inputs[0], node.outputs[1], node.outputs[2]},
                {dx, ops::workspace_like(ctx, node.outputs[3], ".backward")},
                node.attributes,
                true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& instance_norm_ops() {
  static const OpDefs ops = {
      {"instance_norm", "instance_norm", OpGradient::kDifferentiable, instance_norm_backward},
      {"instance_norm_backward", "instance_norm", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
