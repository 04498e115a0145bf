// The style-mix family (src/core/ops/style_mix.h): GraphBuilder::style_mix, its backward rule and its ops' rows.
#include "src/core/ops/style_mix.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const StyleMixParams& p) {
  return {{"layers", double(p.layers)}, {"batch", double(p.batch)}, {"dim", double(p.dim)}};
}

StyleMixParams style_mix_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "layers")), static_cast<int64_t>(ops::attribute(node, "batch")),
          static_cast<int64_t>(ops::attribute(node, "dim"))};
}

std::vector<TensorId> GraphBuilder::style_mix(TensorId w, TensorId crossover, int64_t num_layers) {
  w = in_compute_dtype(w);
  const std::vector<int64_t> ws = shape(w);
  if (ws.size() != 2 || ws[0] % 2 != 0 || num_layers < 1 || num_layers > 32) {
    throw UsageError("style_mix: w must be (2N, D) and 1 to 32 layers, got " + shape_text(ws));
  }
  const int64_t batch = ws[0] / 2;
  if (shape(crossover) != std::vector<int64_t>{batch} || graph_.tensor(crossover).dtype != DType::kInt32) {
    throw UsageError("style_mix: crossover must be int32 (N) = (" + std::to_string(batch) + ")");
  }
  Node node{"style_mix", {w, crossover}, {}, encode(StyleMixParams{num_layers, batch, ws[1]}), false};
  for (int64_t l = 0; l < num_layers; ++l) node.outputs.push_back(activation(next_name("dlatent"), {batch, ws[1]}));
  graph_.add_node(node);
  return node.outputs;
}

namespace {

// One node sums every layer's gradient into w's rows; a layer that does not reach the loss contributes zeros.
std::vector<detail::Contribution> style_mix_rule(detail::BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  Node backward{"style_mix_backward", {}, {ctx.gradient_like(node.inputs[0])}, node.attributes};
  for (size_t l = 0; l < node.outputs.size(); ++l) {
    TensorId d = dout[l];
    if (d == kNoTensor) {
      d = ctx.gradient_like(node.outputs[l], "_zero");
      ctx.emit(Node{"zero_fill", {}, {d}, {{"n", double(ctx.graph().tensor(d).elements())}}});
    }
    backward.inputs.push_back(d);
  }
  backward.inputs.push_back(node.inputs[1]);
  ctx.emit(backward);
  return {{backward.outputs[0], true}, {}};
}

}  // namespace

const OpDefs& style_mix_ops() {
  static const OpDefs ops = {
      {"style_mix", "style_mix", OpGradient::kDifferentiable, style_mix_rule},
      {"style_mix_backward", "style_mix", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
