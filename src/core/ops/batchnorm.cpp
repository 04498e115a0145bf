// The batchnorm family (src/core/ops/batchnorm.h): GraphBuilder::batchnorm and set_batchnorm_groups,
// make_batchnorm_activations_linear, the backward rule and the family's rows.
#include "src/core/ops/batchnorm.h"

#include <string>
#include <utility>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const BatchNormParams& params) {
  return {{"rows", double(params.rows)},
          {"channels", double(params.channels)},
          {"groups", double(params.groups)},
          {"epsilon", params.epsilon},
          {"momentum", params.momentum},
          {"activation", double(params.activation)},
          {"slope", params.slope}};
}

BatchNormParams batchnorm_params(const Node& node) {
  BatchNormParams params;
  params.rows = ops::size_attribute(node, "rows");
  params.channels = ops::size_attribute(node, "channels");
  params.groups = ops::size_attribute(node, "groups");
  params.epsilon = ops::attribute(node, "epsilon");
  params.momentum = ops::attribute(node, "momentum");
  params.activation = static_cast<int>(ops::attribute(node, "activation"));
  params.slope = ops::attribute(node, "slope");
  return params;
}

void GraphBuilder::set_batchnorm_groups(int64_t groups) {
  if (groups < 1) throw UsageError("batchnorm groups must be >= 1, got " + std::to_string(groups));
  batchnorm_groups_ = groups;
}

TensorId GraphBuilder::batchnorm(TensorId x, TensorId gamma, TensorId beta, const BatchNormOptions& options) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const int64_t channels = xs.back();
  const int64_t rows = graph_.tensor(x).elements() / channels;
  const int64_t groups = batchnorm_groups_;
  const std::vector<int64_t> feature{channels};
  if (graph_.tensor(gamma).shape != feature || graph_.tensor(beta).shape != feature) {
    throw UsageError("batchnorm: gamma and beta must be (channels) = (" + std::to_string(channels) + ")");
  }
  if (graph_.tensor(gamma).dtype != DType::kFloat32 || graph_.tensor(beta).dtype != DType::kFloat32) {
    throw UsageError("batchnorm: gamma and beta must be fp32");
  }
  if (rows < 2) throw UsageError("batchnorm: training needs more than one value per channel");
  // Whole samples per group: the rows of one sample are contiguous (batch-major), so rows / groups splits the
  // batch exactly when the batch (first dimension) does.
  if (xs[0] % groups != 0) {
    throw UsageError("batchnorm: the batch of x " + shape_text(xs) + " does not divide into " + std::to_string(groups) +
                     " statistics groups");
  }
  if (rows / groups < 2) {
    throw UsageError("batchnorm: each of the " + std::to_string(groups) +
                     " statistics groups needs more than one value per channel, x is " + shape_text(xs));
  }
  if (!(options.epsilon > 0) || options.momentum < 0 || options.momentum > 1) {
    throw UsageError("batchnorm: epsilon must be > 0 and momentum in [0, 1]");
  }
  if (options.activation == BatchNormOptions::Activation::kLeakyRelu && !(options.slope > 0)) {
    throw UsageError("batchnorm: the LeakyReLU slope must be > 0");
  }
  auto state = [&](const char* suffix, float initial) {
    TensorInfo info;
    info.name = graph_.tensor(gamma).name + suffix;
    info.shape = feature;
    info.role = TensorRole::kState;
    info.initial_value = initial;
    return graph_.add_tensor(info);
  };
  const TensorId running_mean = state(".running_mean", 0.0f), running_var = state(".running_var", 1.0f);
  const TensorId y = activation(next_name("batchnorm"), xs);
  const TensorId mean = activation(next_name("batchnorm_mean"), {groups, channels}, DType::kFloat32);
  const TensorId invstd = activation(next_name("batchnorm_invstd"), {groups, channels}, DType::kFloat32);
  const TensorId workspace = ops::workspace_tensor(graph_, next_name("batchnorm_workspace"),
                                                   batchnorm_workspace_bytes(rows, channels, groups));
  const BatchNormParams params{rows,
                               channels,
                               groups,
                               options.epsilon,
                               options.momentum,
                               static_cast<int>(options.activation),
                               options.slope};
  graph_.add_node(
      Node{"batchnorm", {x, gamma, beta, running_mean, running_var}, {y, mean, invstd, workspace}, encode(params), false});
  return y;
}

int make_batchnorm_activations_linear(Graph& graph) {
  std::vector<Node> nodes = graph.nodes();
  int changed = 0;
  for (Node& node : nodes) {
    if (node.op != "batchnorm" || node.backward || node.attributes.at("activation") == 0) continue;
    node.attributes["activation"] = static_cast<double>(BatchNormOptions::Activation::kLeakyRelu);
    node.attributes["slope"] = 1.0;
    ++changed;
  }
  graph.set_nodes(std::move(nodes));
  return changed;
}

namespace {

// inputs x, gamma, beta, running_mean, running_var; outputs y, mean, invstd, workspace. The backward kernel
// reads the activation's derivative off y, so y (needed by the next layer's weight gradient anyway) and x
// stay alive; it writes all three gradients.
std::vector<detail::Contribution> batchnorm_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], gamma = node.inputs[1], beta = node.inputs[2];
  const TensorId dx = ctx.gradient_like(x), dgamma = ctx.gradient_like(gamma), dbeta = ctx.gradient_like(beta);
  ctx.emit(Node{"batchnorm_backward",
                {dout[0], x, node.outputs[0], gamma, node.outputs[1], node.outputs[2]},
                {dx, dgamma, dbeta, ops::workspace_like(ctx, node.outputs[3], ".backward")},
                node.attributes, true});
  return {{ctx.needs_gradient(x) ? dx : kNoTensor, true}, {dgamma, true}, {dbeta, true}, {}, {}};
}

}  // namespace

const OpDefs& batchnorm_ops() {
  static const OpDefs ops = {
      {"batchnorm", "batchnorm", OpGradient::kDifferentiable, batchnorm_backward},
      {"batchnorm_backward", "batchnorm", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
