// The gemm family (src/core/ops/gemm.h): GraphBuilder::linear and matmul, gemm's backward rule and its row.
#include "src/core/ops/gemm.h"

#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const GemmParams& params) {
  return {{"transpose_a", params.transpose_a ? 1.0 : 0.0}, {"transpose_b", params.transpose_b ? 1.0 : 0.0},
          {"m", double(params.m)}, {"n", double(params.n)}, {"k", double(params.k)}, {"alpha", params.alpha},
          {"batch", double(params.batch)}};
}

GemmParams gemm_params(const Node& node) {
  GemmParams params;
  params.transpose_a = ops::attribute(node, "transpose_a") != 0;
  params.transpose_b = ops::attribute(node, "transpose_b") != 0;
  params.m = ops::size_attribute(node, "m");
  params.n = ops::size_attribute(node, "n");
  params.k = ops::size_attribute(node, "k");
  params.alpha = ops::attribute(node, "alpha");
  params.batch = ops::size_attribute(node, "batch");
  return params;
}

TensorId GraphBuilder::linear(TensorId x, TensorId weight, TensorId bias) {
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> ws = shape(weight);
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    throw UsageError("linear: input " + shape_text(xs) + " does not fit weight " + shape_text(ws));
  }
  std::vector<int64_t> out_shape = xs;
  out_shape.back() = ws[0];
  const int64_t rows = ops::product(xs, 0, xs.size() - 1);
  if (bias != kNoTensor && shape(bias) != std::vector<int64_t>{ws[0]}) {
    throw UsageError("linear: bias must have shape (out)");
  }
  // The bias is the GEMM's third input, in the result's dtype: devices add it in the GEMM's epilogue instead
  // of a pass of its own.
  std::vector<TensorId> inputs{in_compute_dtype(x), in_compute_dtype(weight)};
  if (bias != kNoTensor) inputs.push_back(in_compute_dtype(bias));
  TensorId out = activation(next_name("linear"), out_shape);
  graph_.add_node(Node{"gemm", inputs, {out}, encode(GemmParams{false, true, rows, ws[0], ws[1], 1.0, 1}), false});
  return out;
}

TensorId GraphBuilder::matmul(TensorId a, TensorId b, bool transpose_a, bool transpose_b, double alpha) {
  const std::vector<int64_t> as = shape(a);
  const std::vector<int64_t> bs = shape(b);
  if (as.size() < 2 || as.size() != bs.size() ||
      !std::equal(as.begin(), as.end() - 2, bs.begin())) {
    throw UsageError("matmul: operands " + shape_text(as) + " and " + shape_text(bs) + " do not batch together");
  }
  const size_t r = as.size();
  const int64_t m = transpose_a ? as[r - 1] : as[r - 2];
  const int64_t k = transpose_a ? as[r - 2] : as[r - 1];
  const int64_t kb = transpose_b ? bs[r - 1] : bs[r - 2];
  const int64_t n = transpose_b ? bs[r - 2] : bs[r - 1];
  if (k != kb) throw UsageError("matmul: inner dimensions differ: " + shape_text(as) + " x " + shape_text(bs));
  std::vector<int64_t> out_shape(as.begin(), as.end() - 2);
  out_shape.push_back(m);
  out_shape.push_back(n);
  TensorId out = activation(next_name("matmul"), out_shape);
  graph_.add_node(Node{"gemm", {in_compute_dtype(a), in_compute_dtype(b)}, {out},
                       encode(GemmParams{transpose_a, transpose_b, m, n, k, alpha, ops::product(as, 0, r - 2)}),
                       false});
  return out;
}

namespace {

Node gemm_node(TensorId a, TensorId b, TensorId c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               int64_t batch) {
  return Node{"gemm", {a, b}, {c}, encode(GemmParams{ta, tb, m, n, k, alpha, batch}), true};
}

// C = alpha op(A) op(B) (+ bias): dA and dB are GEMMs of dC with the other operand; which operand is transposed
// depends on the forward's transposes (the four cases below), so that no explicit transpose is ever stored.
std::vector<detail::Contribution> gemm_backward(detail::BackwardContext& ctx, const Node& node,
                                                const std::vector<TensorId>& dout) {
  const TensorId a = node.inputs[0], b = node.inputs[1], dc = dout[0];
  const GemmParams p = gemm_params(node);
  const bool ta = p.transpose_a, tb = p.transpose_b;
  const int64_t m = p.m, n = p.n, k = p.k, batch = p.batch;
  const double alpha = p.alpha;
  const bool want_a = ctx.needs_gradient(a), want_b = ctx.needs_gradient(b);
  const TensorId da = want_a ? ctx.gradient_like(a) : kNoTensor;
  const TensorId db = want_b ? ctx.gradient_like(b) : kNoTensor;
  if (!ta && !tb) {
    if (want_a) ctx.emit(gemm_node(dc, b, da, false, true, m, k, n, alpha, batch));
    if (want_b) ctx.emit(gemm_node(a, dc, db, true, false, k, n, m, alpha, batch));
  } else if (!ta && tb) {
    if (want_a) ctx.emit(gemm_node(dc, b, da, false, false, m, k, n, alpha, batch));
    if (want_b) ctx.emit(gemm_node(dc, a, db, true, false, n, k, m, alpha, batch));
  } else if (ta && !tb) {
    if (want_a) ctx.emit(gemm_node(b, dc, da, false, true, k, m, n, alpha, batch));
    if (want_b) ctx.emit(gemm_node(a, dc, db, false, false, k, n, m, alpha, batch));
  } else {
    if (want_a) ctx.emit(gemm_node(b, dc, da, true, true, k, m, n, alpha, batch));
    if (want_b) ctx.emit(gemm_node(dc, a, db, true, true, n, k, m, alpha, batch));
  }
  // No bias, or one that needs no gradient (an input gradient's pass, append_input_gradient).
  if (node.inputs.size() < 3 || !ctx.needs_gradient(node.inputs[2])) return {{da, true}, {db, true}};
  // A fused bias (linear layers): its gradient is the column sum of dC.
  const TensorId dbias = ctx.gradient_like(node.inputs[2]);
  ctx.emit(Node{"bias_backward", {dc}, {dbias}, {{"rows", double(m * batch)}, {"cols", double(n)}}, true});
  return {{da, true}, {db, true}, {dbias, true}};
}

}  // namespace

const OpDefs& gemm_ops() {
  static const OpDefs ops = {
      {"gemm", "gemm", OpGradient::kDifferentiable, gemm_backward},
  };
  return ops;
}

}  // namespace sb
