// The drop_path family (src/core/ops/drop_path.h): GraphBuilder::drop_path, its rule and row.
#include "src/core/ops/drop_path.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const DropPathParams& params) {
  return {{"n", double(params.samples)},
          {"per_sample", double(params.per_sample)},
          {"p", params.p},
          {"block_offset", double(params.block_offset)}};
}

DropPathParams drop_path_params(const Node& node) {
  return {ops::size_attribute(node, "n"), ops::size_attribute(node, "per_sample"), ops::attribute(node, "p"),
          ops::size_attribute(node, "block_offset")};
}

TensorId GraphBuilder::drop_path(TensorId x, double probability) {
  if (probability < 0 || probability >= 1) throw UsageError("drop_path probability must be in [0, 1)");
  if (probability == 0 || !dropout_enabled_) return x;
  x = in_compute_dtype(x);
  const int64_t batch = graph_.tensor(x).shape.at(0);
  const TensorId out = activation(next_name("drop_path"), graph_.tensor(x).shape);
  graph_.add_node(Node{"drop_path", {x}, {out},
                       encode(DropPathParams{batch, graph_.tensor(x).elements() / batch, probability, dropout_blocks_}),
                       false});
  dropout_blocks_ += (batch + 3) / 4;
  return out;
}

namespace {

// The same samples dropped from dy: the forward's attributes, hence its Philox range this step.
std::vector<detail::Contribution> drop_path_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"drop_path", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& drop_path_ops() {
  static const OpDefs ops = {
      {"drop_path", "drop_path", OpGradient::kDifferentiable, drop_path_backward},
  };
  return ops;
}

}  // namespace sb
