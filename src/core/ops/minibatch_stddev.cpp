// The minibatch-stddev family (src/core/ops/minibatch_stddev.h): GraphBuilder::minibatch_stddev, the rules of the
// op and of its backward (R1 differentiates D's input gradient again, and the backward is not linear in x), and
// the ops' rows. Kernels: src/cpu/minibatch_stddev.cpp, src/cuda/minibatch_stddev.cu.
#include "src/core/ops/minibatch_stddev.h"

#include <algorithm>
#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/image_params.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

void check_minibatch_stddev_geometry(const MinibatchStddevGeometry& g) {
  if (g.batch < 1 || g.height < 1 || g.width < 1 || g.channels < 1 || g.group < 1 || g.splits < 1 ||
      g.batch % g.splits != 0 || g.part() % g.group != 0) {
    throw UsageError("minibatch_stddev: a batch of " + std::to_string(g.batch) + " in " + std::to_string(g.splits) +
                     " parts does not divide into groups of " + std::to_string(g.group));
  }
}

NodeAttributes encode(const MinibatchStddevGeometry& g) {
  NodeAttributes attributes = encode(ImageParams{g.batch, g.height, g.width, g.channels});
  attributes["group"] = double(g.group);
  attributes["splits"] = double(g.splits);
  return attributes;
}

MinibatchStddevGeometry minibatch_stddev_geometry(const Node& node) {
  const ImageParams image = image_params(node);
  MinibatchStddevGeometry g;
  g.batch = image.batch, g.height = image.height, g.width = image.width, g.channels = image.channels;
  g.group = static_cast<int64_t>(ops::attribute(node, "group"));
  g.splits = static_cast<int64_t>(ops::attribute(node, "splits"));
  return g;
}

TensorId GraphBuilder::minibatch_stddev(TensorId x, int64_t group_size) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc_shape(graph_, x, "minibatch_stddev");
  if (group_size < 1) throw UsageError("minibatch_stddev: the group size must be >= 1");
  if (xs[0] % batchnorm_groups_ != 0) {
    throw UsageError("minibatch_stddev: the batch of " + shape_text(xs) + " does not divide into " +
                     std::to_string(batchnorm_groups_) + " parts");
  }
  MinibatchStddevGeometry g;
  g.batch = xs[0], g.height = xs[1], g.width = xs[2], g.channels = xs[3];
  g.splits = batchnorm_groups_;
  // The reference's tf.minimum(group_size, batch); its reshape refuses a batch the group does not divide, where
  // this takes the largest group size that divides the part (the same work: `plan` and `maxbatch` try any batch).
  g.group = std::min(group_size, g.part());
  while (g.part() % g.group != 0) --g.group;
  check_minibatch_stddev_geometry(g);
  const TensorId y = activation(next_name("minibatch_stddev"), {xs[0], xs[1], xs[2], xs[3] + 1});
  graph_.add_node(Node{"minibatch_stddev", {x}, {y}, encode(g), false});
  return y;
}

namespace {

// Inputs x; output y = [x, statistic].
std::vector<detail::Contribution> minibatch_stddev_rule(detail::BackwardContext& ctx, const Node& node,
                                                        const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"minibatch_stddev_backward", {node.inputs[0], dout[0]}, {dx}, node.attributes});
  return {{dx, true}};
}

// The second-order rule (src/cpu/minibatch_stddev.h derives both halves): inputs x, dy; output dx. One node
// writes both halves (they share the group statistics).
std::vector<detail::Contribution> minibatch_stddev_backward_rule(detail::BackwardContext& ctx, const Node& node,
                                                                 const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], dy = node.inputs[1];
  const TensorId dx2 = ctx.gradient_like(x), ddy = ctx.gradient_like(dy);
  ctx.emit(Node{"minibatch_stddev_backward_backward", {x, dy, dout[0]}, {dx2, ddy}, node.attributes});
  return {{ctx.needs_gradient(x) ? dx2 : kNoTensor, true}, {ctx.needs_gradient(dy) ? ddy : kNoTensor, true}};
}

}  // namespace

const OpDefs& minibatch_stddev_ops() {
  static const OpDefs ops = {
      {"minibatch_stddev", "minibatch_stddev", OpGradient::kDifferentiable, minibatch_stddev_rule},
      {"minibatch_stddev_backward", "minibatch_stddev", OpGradient::kDifferentiable, minibatch_stddev_backward_rule},
      {"minibatch_stddev_backward_backward", "minibatch_stddev", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
