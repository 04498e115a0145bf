// GraphBuilder's ops added for ConvS2S (include/scalebench/graph_builder.h): GLU, weight normalisation,
// GradMultiply and per-row scaling. Sizes the kernels need (rows, cols) are stored as node attributes.
#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/shape_text.h"

namespace sb {
TensorId GraphBuilder::glu(TensorId x) {
  x = in_compute_dtype(x);
  std::vector<int64_t> shape = graph_.tensor(x).shape;
  if (shape.empty() || shape.back() < 2 || shape.back() % 2 != 0) {
    throw UsageError("glu: the last dimension must be even (two halves), got " + shape_text(shape));
  }
  const int64_t half = shape.back() / 2;
  const int64_t rows = graph_.tensor(x).elements() / shape.back();
  shape.back() = half;
  const TensorId y = activation(next_name("glu"), shape);
  graph_.add_node(Node{"glu", {x}, {y}, {{"rows", double(rows)}, {"cols", double(half)}}, false});
  return y;
}

TensorId GraphBuilder::weight_norm(TensorId v, TensorId g) {
  const TensorInfo& vi = graph_.tensor(v);
  const TensorInfo& gi = graph_.tensor(g);
  if (vi.dtype != DType::kFloat32 || gi.dtype != DType::kFloat32) {
    throw UsageError("weight_norm: v and g must be fp32 (parameters), got '" + vi.name + "' " +
                     dtype_name(vi.dtype) + " and '" + gi.name + "' " + dtype_name(gi.dtype));
  }
  const std::vector<int64_t> vs = vi.shape;
  if (vs.size() < 2 || gi.shape != std::vector<int64_t>{vs[0]}) {
    throw UsageError("weight_norm: v must be (rows, ...) and g (rows), got " + shape_text(vs) + " and " + shape_text(gi.shape));
  }
  const int64_t rows = vs[0], cols = vi.elements() / rows;
  const std::string name = vi.name + ".normalized";
  const TensorId w = activation(name, vs, DType::kFloat32);
  const TensorId norms = activation(name + "_norms", {rows}, DType::kFloat32);
  graph_.add_node(Node{"weight_norm", {v, g}, {w, norms}, {{"rows", double(rows)}, {"cols", double(cols)}}, false});
  return w;
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

TensorId GraphBuilder::scale_rows(TensorId x, TensorId factors) {
  x = in_compute_dtype(x);
  const TensorInfo& fi = graph_.tensor(factors);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (fi.dtype != DType::kFloat32 || fi.role != TensorRole::kInput) {
    throw UsageError("scale_rows: the factors '" + fi.name + "' must be an fp32 input (data, no gradient)");
  }
  if (fi.shape.size() > xs.size() || !std::equal(fi.shape.begin(), fi.shape.end(), xs.begin())) {
    throw UsageError("scale_rows: factors " + shape_text(fi.shape) + " are not the leading dimensions of " + shape_text(xs));
  }
  const int64_t rows = fi.elements(), cols = graph_.tensor(x).elements() / rows;
  const TensorId y = activation(next_name("scale_rows"), xs);
  graph_.add_node(Node{"scale_rows", {x, factors}, {y}, {{"rows", double(rows)}, {"cols", double(cols)}}, false});
  return y;
}

}  // namespace sb
