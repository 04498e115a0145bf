// The noise-injection family (src/core/ops/noise_injection.h): GraphBuilder::noise_injection, its backward rule
// and its ops' rows. Kernels: src/cpu/noise_injection.cpp, src/cuda/stylegan_g_ops.cu.
#include "src/core/ops/noise_injection.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/image_params.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"

namespace sb {

NodeAttributes encode(const NoiseInjectionParams& p) {
  return {{"batch", double(p.batch)}, {"pixels", double(p.pixels)}, {"channels", double(p.channels)},
          {"n", double(p.n)}, {"block_offset", double(p.block_offset)}};
}

NoiseInjectionParams noise_injection_params(const Node& node) {
  NoiseInjectionParams p;
  p.batch = static_cast<int64_t>(ops::attribute(node, "batch"));
  p.pixels = static_cast<int64_t>(ops::attribute(node, "pixels"));
  p.channels = static_cast<int64_t>(ops::attribute(node, "channels"));
  p.n = static_cast<int64_t>(ops::attribute(node, "n"));
  p.block_offset = static_cast<int64_t>(ops::attribute(node, "block_offset"));
  return p;
}

TensorId GraphBuilder::noise_injection(TensorId x, TensorId weight, TensorId sample_ids) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc_shape(graph_, x, "noise_injection");
  if (shape(weight) != std::vector<int64_t>{xs[3]} || graph_.tensor(weight).dtype != DType::kFloat32) {
    throw UsageError("noise_injection: the weight must be fp32 (C) = (" + std::to_string(xs[3]) + ")");
  }
  if (shape(sample_ids) != std::vector<int64_t>{xs[0]} || graph_.tensor(sample_ids).dtype != DType::kInt32) {
    throw UsageError("noise_injection: sample ids must be int32 (N) = (" + std::to_string(xs[0]) + ")");
  }
  const int64_t pixels = xs[1] * xs[2];
  const TensorId y = activation(next_name("noise"), xs);
  const NoiseInjectionParams params{xs[0], pixels, xs[3], 4 * noise_blocks(pixels), dropout_blocks_};
  graph_.add_node(Node{"noise_injection", {x, weight, sample_ids}, {y}, encode(params), false});
  dropout_blocks_ += noise_blocks(pixels);
  return y;
}

namespace {

// Inputs x, weight, sample ids. dx is dy itself; the weight's gradient draws the forward's noise again (the
// node's attributes, hence its Philox range this step).
std::vector<detail::Contribution> noise_injection_rule(detail::BackwardContext& ctx, const Node& node,
                                                       const std::vector<TensorId>& dout) {
  std::vector<detail::Contribution> result{{dout[0], false}, {}, {}};
  if (ctx.needs_gradient(node.inputs[1])) {
    const TensorId dweight = ctx.gradient_like(node.inputs[1]);
    const NoiseInjectionParams p = noise_injection_params(node);
    const TensorId workspace = ops::workspace_tensor(ctx.graph(), ctx.graph().tensor(dweight).name + ".partials",
                                                     noise_injection_workspace_bytes(p.batch, p.pixels, p.channels));
    ctx.emit(Node{"noise_injection_backward", {dout[0], node.inputs[2]}, {dweight, workspace}, node.attributes});
    result[1] = {dweight, true};
  }
  return result;
}

}  // namespace

const OpDefs& noise_injection_ops() {
  static const OpDefs ops = {
      {"noise_injection", "noise_injection", OpGradient::kDifferentiable, noise_injection_rule},
      {"noise_injection_backward", "noise_injection", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
