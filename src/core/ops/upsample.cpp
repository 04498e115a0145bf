// The upsample family (src/core/ops/upsample.h): GraphBuilder::upsample_nearest and upsample_bilinear, their
// rules and rows.
#include "src/core/ops/upsample.h"

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const UpsampleParams& params, bool bilinear) {
  NodeAttributes a{{"batch", double(params.batch)}, {"in_h", double(params.in_h)},   {"in_w", double(params.in_w)},
                   {"channels", double(params.channels)}, {"out_h", double(params.out_h)},
                   {"out_w", double(params.out_w)}};
  if (bilinear) a["align_corners"] = params.align_corners ? 1.0 : 0.0;
  return a;
}

UpsampleParams upsample_params(const Node& node) {
  UpsampleParams params;
  params.batch = ops::size_attribute(node, "batch");
  params.in_h = ops::size_attribute(node, "in_h");
  params.in_w = ops::size_attribute(node, "in_w");
  params.channels = ops::size_attribute(node, "channels");
  params.out_h = ops::size_attribute(node, "out_h");
  params.out_w = ops::size_attribute(node, "out_w");
  auto align = node.attributes.find("align_corners");
  params.align_corners = align != node.attributes.end() && align->second != 0;
  return params;
}

TensorId GraphBuilder::upsample_nearest(TensorId x, int64_t out_h, int64_t out_w) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4 || out_h < 1 || out_w < 1) {
    throw UsageError("upsample_nearest: input must be (N, H, W, C) and the output size positive, got " + shape_text(xs));
  }
  const TensorId y = activation(next_name("upsample_nearest"), {xs[0], out_h, out_w, xs[3]});
  graph_.add_node(Node{"upsample_nearest", {x}, {y},
                       encode(UpsampleParams{{xs[0], xs[1], xs[2], xs[3], out_h, out_w}, false}, false), false});
  return y;
}

TensorId GraphBuilder::upsample_bilinear(TensorId x, int64_t out_h, int64_t out_w, bool align_corners) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4 || out_h < 1 || out_w < 1) {
    throw UsageError("upsample_bilinear: input must be (N, H, W, C) and the output size positive, got " + shape_text(xs));
  }
  const TensorId y = activation(next_name("upsample_bilinear"), {xs[0], out_h, out_w, xs[3]});
  graph_.add_node(Node{"upsample_bilinear", {x}, {y},
                       encode(UpsampleParams{{xs[0], xs[1], xs[2], xs[3], out_h, out_w}, align_corners}, true), false});
  return y;
}

namespace {

// Resizing: the backward node reads only the output gradient (the sizes are attributes).
detail::BackwardRule resize_backward(const char* op) {
  return [op](detail::BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    ctx.emit(Node{op, {dout[0]}, {dx}, node.attributes, true});
    return std::vector<detail::Contribution>{{dx, true}};
  };
}

}  // namespace

const OpDefs& upsample_ops() {
  constexpr OpGradient kDiff = OpGradient::kDifferentiable, kNone = OpGradient::kNotDifferentiable;
  static const OpDefs ops = {
      {"upsample_nearest", "upsample", kDiff, resize_backward("upsample_nearest_backward")},
      {"upsample_bilinear", "upsample", kDiff, resize_backward("upsample_bilinear_backward")},
      {"upsample_nearest_backward", "upsample", kNone, nullptr},
      {"upsample_bilinear_backward", "upsample", kNone, nullptr},
  };
  return ops;
}

}  // namespace sb
