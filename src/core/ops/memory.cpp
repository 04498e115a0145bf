// The memory family: views (view, grad_multiply, stop_gradient, discard_gradient), stack/unstack, the device copy
// and the fills (zero_fill and unstack come from autodiff's rules, fill from GraphBuilder::constant). Their
// GraphBuilder methods, rules and rows. Views run no kernel; the copies, fills and stack/unstack are the
// executors' own.
#include <functional>
#include <numeric>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::reshape(TensorId x, std::vector<int64_t> new_shape) {
  const int64_t elements = std::accumulate(new_shape.begin(), new_shape.end(), int64_t{1}, std::multiplies<>());
  if (elements != graph_.tensor(x).elements()) {
    throw UsageError("reshape: " + shape_text(shape(x)) + " has no " + shape_text(new_shape) + " view");
  }
  TensorId out = activation(next_name("reshape"), std::move(new_shape), graph_.tensor(x).dtype);
  graph_.tensor(out).view_of = x;
  graph_.add_node(Node{"view", {x}, {out}, {{"n", double(elements)}}, false});
  return out;
}

TensorId GraphBuilder::grad_multiply(TensorId x, double factor) {
  if (!(factor > 0)) throw UsageError("grad_multiply: the factor must be > 0");
  if (!gradient_scaling_enabled_) return x;
  // Copied, not referenced: activation() may grow the tensor list and move x's TensorInfo (a reference read
  // after it gave n = 1 in a bf16 graph, and the backward `scale` then left all but one gradient unscaled).
  const TensorInfo info = graph_.tensor(x);
  const TensorId y = activation(next_name("grad_multiply"), info.shape, info.dtype);
  graph_.tensor(y).view_of = x;  // the identity: the planner gives y the storage of x, no kernel runs
  graph_.add_node(Node{"grad_multiply", {x}, {y}, {{"n", double(info.elements())}, {"factor", factor}}, false});
  return y;
}

TensorId GraphBuilder::stop_gradient(TensorId x) {
  if (!gradient_scaling_enabled_) return x;
  return ops::view_node(graph_, "stop_gradient", x, next_name(graph_.tensor(x).name + ".stop_gradient"));
}

TensorId GraphBuilder::discard_gradient(TensorId x) {
  if (!gradient_scaling_enabled_) return x;
  return ops::view_node(graph_, "discard_gradient", x, next_name(graph_.tensor(x).name + ".discard_gradient"));
}

TensorId GraphBuilder::stack(const std::vector<TensorId>& parts) {
  if (parts.empty()) throw UsageError("stack: no tensors");
  const DType dtype = graph_.tensor(parts[0]).dtype;
  for (TensorId part : parts) {
    if (shape(part) != shape(parts[0]) || graph_.tensor(part).dtype != dtype) {
      throw UsageError("stack: parts must be of one shape and dtype, got " + shape_text(shape(part)) + " and " +
                       shape_text(shape(parts[0])));
    }
  }
  std::vector<int64_t> out_shape{static_cast<int64_t>(parts.size())};
  out_shape.insert(out_shape.end(), shape(parts[0]).begin(), shape(parts[0]).end());
  TensorId out = activation(next_name("stack"), out_shape, dtype);
  graph_.add_node(Node{"stack", parts, {out}, {{"n", double(graph_.tensor(parts[0]).elements())}}, false});
  return out;
}

void GraphBuilder::copy(TensorId dst, TensorId src) {
  const TensorInfo& d = graph_.tensor(dst);
  const TensorInfo& s = graph_.tensor(src);
  if (!(d.dtype == s.dtype && d.elements() == s.elements())) {
    throw UsageError("copy: '" + s.name + "' " + shape_text(s.shape) + " " + dtype_name(s.dtype) + " does not fit '" +
                     d.name + "' " + shape_text(d.shape) + " " + dtype_name(d.dtype));
  }
  graph_.add_node(Node{"copy", {src}, {dst}, {{"bytes", double(d.bytes())}}, false});
}

namespace {

using detail::BackwardContext;
using detail::Contribution;

// A view's gradient is a view of the output gradient with the input's shape. Not fresh: it shares storage,
// so it must never become a parameter's gradient buffer or be written in place.
std::vector<Contribution> view_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.graph().tensor(dx).view_of = dout[0];
  ctx.emit(Node{"view", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, false}};
}

// The forward pass is a view; the gradient is scaled (the same `scale` node as GraphBuilder::scale's backward).
std::vector<Contribution> grad_multiply_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// One node writes every part's gradient (slices of dout); parts that need none get a buffer nobody reads.
std::vector<Contribution> stack_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  Node unstack{"unstack", {dout[0]}, {}, node.attributes, true};
  std::vector<Contribution> result;
  for (TensorId part : node.inputs) {
    unstack.outputs.push_back(ctx.gradient_like(part));
    result.push_back({ctx.needs_gradient(part) ? unstack.outputs.back() : kNoTensor, true});
  }
  ctx.emit(unstack);
  return result;
}

// Nothing flows back (autodiff does not even count the input as used on this node's account).
std::vector<Contribution> no_gradient(BackwardContext&, const Node&, const std::vector<TensorId>&) {
  return {{kNoTensor, false}};
}

// A copy only switches a graph's data inputs (a decode loop's sub-steps): a loss that reaches one differentiates
// through generation by mistake (src/core/ops/decode.cpp refuses the same way).
std::vector<Contribution> copy_refuses_gradient(BackwardContext&, const Node& node, const std::vector<TensorId>&) {
  throw UsageError("op '" + node.op + "' has no gradient: a loss depends on a no-gradient generation or copy node");
}

}  // namespace

const OpDefs& memory_ops() {
  constexpr OpGradient kDiff = OpGradient::kDifferentiable, kStop = OpGradient::kStopsGradient,
                       kNone = OpGradient::kNotDifferentiable;
  static const OpDefs ops = {
      {"view", "memory", kDiff, view_backward},
      {"grad_multiply", "memory", kDiff, grad_multiply_backward},  // a view whose gradient is scaled (ConvS2S)
      {"stack", "memory", kDiff, stack_backward},
      // Views that cut the path (pix2pixHD: D(G(z).detach()), and G's loss through D, whose weight gradients are
      // dropped). Only stop_gradient is detached as torch's .detach() (backward_rules.cpp's detached_op had it
      // alone): discard_gradient's input still counts as used on its account.
      {"stop_gradient", "memory", kStop, no_gradient, /*detached=*/true},
      {"discard_gradient", "memory", kStop, no_gradient},
      {"copy", "memory", kStop, copy_refuses_gradient},
      // zero_fill (the gradient of a declared-unused parameter, or a part with no gradient) and unstack (stack's
      // gradient) come from autodiff itself; fill makes constants and the seed of an input gradient.
      {"zero_fill", "memory", kNone, nullptr},
      {"unstack", "memory", kNone, nullptr},
      {"fill", "memory", kNone, nullptr},
  };
  return ops;
}

// A tensor filled with `value` (StyleGAN's constant input, an input gradient's seed).
TensorId GraphBuilder::constant(std::vector<int64_t> dims, double value) {
  const TensorId out = activation(next_name("constant"), std::move(dims));
  graph_.add_node(Node{"fill", {}, {out}, {{"n", double(graph_.tensor(out).elements())}, {"value", value}}, false});
  return out;
}

}  // namespace sb
