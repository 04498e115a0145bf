// The pooling family (src/core/ops/pooling.h): the geometry check, GraphBuilder::max_pool2d, avg_pool2d and
// global_avg_pool, the rules of both pools and (second order, StyleGAN's R1 path) of avg_pool2d_backward, and
// the family's rows.
#include "src/core/ops/pooling.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

// Whether every window along one axis holds an input pixel: the first ends at or after pixel 0 and starts
// before the input ends, and so does the last (the windows between start in between, so they hold one too).
bool axis_windows_hold_input(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_begin) {
  const int64_t first = -pad_begin, last = (out - 1) * stride - pad_begin;
  return first + kernel > 0 && first < in && last + kernel > 0 && last < in;
}

}  // namespace

void check_pool_geometry(const Conv2dGeometry& g, bool windows_of_padding_allowed) {
  const bool positive = g.batch > 0 && g.in_h > 0 && g.in_w > 0 && g.in_c > 0 && g.kernel_h > 0 && g.kernel_w > 0 &&
                        g.stride_h > 0 && g.stride_w > 0;
  if (!positive) throw UsageError("pooling: sizes, windows and strides must be positive");
  if (g.in_c != g.out_c || g.groups != g.in_c || g.dilation_h != 1 || g.dilation_w != 1) {
    throw UsageError("pooling: the geometry must keep the channels (groups = C) and have no dilation");
  }
  if (g.out_h != conv_output_size(g.in_h, g.kernel_h, g.stride_h, 1, g.pad_top, g.pad_bottom) ||
      g.out_w != conv_output_size(g.in_w, g.kernel_w, g.stride_w, 1, g.pad_left, g.pad_right) || g.out_h <= 0 ||
      g.out_w <= 0) {
    throw UsageError("pooling: the output extent does not follow from input, window, stride and padding");
  }
  if (!windows_of_padding_allowed &&
      !(axis_windows_hold_input(g.in_h, g.out_h, g.kernel_h, g.stride_h, g.pad_top) &&
        axis_windows_hold_input(g.in_w, g.out_w, g.kernel_w, g.stride_w, g.pad_left))) {
    throw UsageError("pooling: a window would hold padding only (max pooling and an average that does not count "
                     "the padding need an input pixel in every window)");
  }
}

namespace {

Conv2dGeometry pool_geometry(const char* op, const std::vector<int64_t>& xs, int64_t kh, int64_t kw,
                             Conv2dOptions options, bool windows_of_padding_allowed = false) {
  if (options.dilation_h != 1 || options.dilation_w != 1 || options.groups != 1) {
    throw UsageError(std::string(op) + ": pooling takes no dilation or groups");
  }
  if (xs.size() == 4) options.groups = xs[3];  // a pooling window is depthwise
  const Conv2dGeometry g = window_geometry(op, xs, xs.size() == 4 ? xs[3] : 0, kh, kw, options);
  check_pool_geometry(g, windows_of_padding_allowed);
  return g;
}

}  // namespace

TensorId GraphBuilder::max_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options) {
  x = in_compute_dtype(x);
  const Conv2dGeometry g = pool_geometry("max_pool2d", graph_.tensor(x).shape, kernel, kernel, options);
  const TensorId y = activation(next_name("max_pool"), {g.batch, g.out_h, g.out_w, g.out_c});
  const TensorId argmax = activation(next_name("max_pool_argmax"), {g.batch, g.out_h, g.out_w, g.out_c}, DType::kInt32);
  graph_.add_node(Node{"max_pool2d", {x}, {y, argmax}, encode(g), false});
  return y;
}

TensorId GraphBuilder::avg_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options, bool count_include_pad) {
  x = in_compute_dtype(x);
  const Conv2dGeometry g =
      pool_geometry("avg_pool2d", graph_.tensor(x).shape, kernel, kernel, options, count_include_pad);
  const TensorId y = activation(next_name("avg_pool"), {g.batch, g.out_h, g.out_w, g.out_c});
  Node node{"avg_pool2d", {x}, {y}, encode(g), false};
  node.attributes["count_include_pad"] = count_include_pad ? 1.0 : 0.0;
  graph_.add_node(node);
  return y;
}

TensorId GraphBuilder::global_avg_pool(TensorId x) {
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("global_avg_pool: input must be (N, H, W, C), got " + shape_text(xs));
  x = in_compute_dtype(x);
  const Conv2dGeometry g = pool_geometry("global_avg_pool", xs, xs[1], xs[2], Conv2dOptions{});
  const TensorId y = activation(next_name("global_avg_pool"), {g.batch, 1, 1, g.out_c});
  Node node{"avg_pool2d", {x}, {y}, encode(g), false};
  node.attributes["count_include_pad"] = 1.0;
  graph_.add_node(node);
  return y;
}

namespace {

using detail::BackwardContext;
using detail::Contribution;

std::vector<Contribution> max_pool2d_backward(BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"max_pool2d_backward", {dout[0], node.outputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

std::vector<Contribution> avg_pool2d_backward(BackwardContext& ctx, const Node& node,
                                              const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"avg_pool2d_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// Second order (R1): avg_pool2d_backward(dy) = Pᵀ dy is linear, so d dy = P u (an avg_pool2d).
std::vector<Contribution> avg_pool2d_backward_rule(BackwardContext& ctx, const Node& node,
                                                   const std::vector<TensorId>& dout) {
  const TensorId ddy = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"avg_pool2d", {dout[0]}, {ddy}, node.attributes});
  return {{ddy, true}};
}

}  // namespace

const OpDefs& pooling_ops() {
  static const OpDefs ops = {
      {"max_pool2d", "pooling", OpGradient::kDifferentiable, max_pool2d_backward},
      {"avg_pool2d", "pooling", OpGradient::kDifferentiable, avg_pool2d_backward},
      {"avg_pool2d_backward", "pooling", OpGradient::kDifferentiable, avg_pool2d_backward_rule},
      {"max_pool2d_backward", "pooling", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
