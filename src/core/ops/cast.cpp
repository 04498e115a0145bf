// The cast family: precision casts (n values). GraphBuilder::converted inserts one per (tensor, dtype) and reuses
// it (mixed precision's cast-once-per-step of each weight); cast's rule and row. Kernels: src/cpu/cast.cpp,
// src/cuda/cast.cu.
#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_registry.h"

namespace sb {

TensorId GraphBuilder::converted(TensorId x, DType dtype) {
  const TensorInfo& info = graph_.tensor(x);
  if (info.dtype == dtype) return x;
  if (!dtype_is_floating(info.dtype)) throw UsageError("'" + info.name + "' is not floating-point");
  auto cached = copies_.find({x, dtype});
  if (cached != copies_.end()) return cached->second;
  const std::string name = info.name + "." + dtype_name(dtype);
  const std::vector<int64_t> dims = info.shape;
  const int64_t elements = info.elements();
  const TensorId copy = activation(name, dims, dtype);
  graph_.add_node(Node{"cast", {x}, {copy}, {{"n", double(elements)}}, false});
  copies_[{x, dtype}] = copy;
  return copy;
}

namespace {

// The gradient of a precision cast is the cast back. Mixed precision casts each fp32 weight and bias to
// bf16 once per step, and that copy's gradient usually comes from a single weight-gradient GEMM or bias
// column sum: then that node writes fp32 directly (the GEMM: bf16 operands, fp32 accumulation and output;
// the column sum accumulates in fp32 anyway) instead of rounding to bf16 and casting back, which keeps
// full-precision parameter gradients and saves a pass over them.
std::vector<detail::Contribution> cast_backward(detail::BackwardContext& ctx, const Node& node,
                                                const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0];
  const Node* producer = ctx.backward_producer(dout[0]);
  const bool to_fp32 = ctx.graph().tensor(x).dtype == DType::kFloat32;  // what those producers can write
  if (to_fp32 && producer != nullptr && (producer->op == "gemm" || producer->op == "bias_backward")) {
    ctx.graph().tensor(dout[0]).dtype = ctx.graph().tensor(x).dtype;
    return {{dout[0], true}};
  }
  const TensorId dx = ctx.gradient_like(x);
  ctx.emit(Node{"cast", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

}  // namespace

const OpDefs& cast_ops() {
  static const OpDefs ops = {
      // Mixed precision's copies into the compute dtype; the gradient casts back.
      {"cast", "cast", OpGradient::kDifferentiable, cast_backward},
  };
  return ops;
}

}  // namespace sb
