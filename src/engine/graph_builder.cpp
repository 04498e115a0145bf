// Forward-graph construction with shape checks (include/scalebench/graph_builder.h). Sizes a kernel needs
// (rows, columns, m/n/k, batch) are stored as node attributes here, once, so executors never infer them.
// Operand shapes are copied, not referenced: adding a tensor may reallocate the graph's tensor list.
#include "scalebench/graph_builder.h"

#include <numeric>

#include "scalebench/error.h"

namespace sb {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t value = 1;
  for (size_t i = begin; i < end; ++i) value *= dims[i];
  return value;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + ")";
}

}  // namespace

GraphBuilder::GraphBuilder(Graph& graph, DType compute) : graph_(graph), compute_(compute) {
  if (compute != DType::kFloat32 && compute != DType::kBFloat16 && compute != DType::kFloat16) {
    throw UsageError(std::string("the engine computes in fp32, bf16 or fp16, not ") + dtype_name(compute));
  }
}

std::string GraphBuilder::next_name(const std::string& op) { return op + "_" + std::to_string(counter_++); }

TensorId GraphBuilder::activation(const std::string& name, std::vector<int64_t> dims) {
  return activation(name, std::move(dims), compute_);
}

TensorId GraphBuilder::in_compute_dtype(TensorId x) { return converted(x, compute_); }

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

TensorId GraphBuilder::activation(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.dtype = dtype;
  info.role = TensorRole::kActivation;
  return graph_.add_tensor(info);
}

TensorId GraphBuilder::parameter(const std::string& name, std::vector<int64_t> dims) {
  auto known = parameters_.find(name);
  if (known != parameters_.end()) {
    const TensorInfo& info = graph_.tensor(known->second);
    if (info.shape != dims) {
      throw UsageError("parameter '" + name + "' declared again as " + shape_text(dims) + ", was " +
                       shape_text(info.shape));
    }
    if (info.parameter_group != parameter_group_) {  // one weight, one optimizer: its group is where it was declared
      throw UsageError("parameter '" + name + "' declared again in parameter group '" + parameter_group_ +
                       "', was in '" + info.parameter_group + "'");
    }
    return known->second;
  }
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.role = TensorRole::kParameter;
  info.parameter_group = parameter_group_;
  return parameters_[name] = graph_.add_tensor(info);
}

TensorId GraphBuilder::input(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.dtype = dtype;
  info.role = TensorRole::kInput;
  return graph_.add_tensor(info);
}

void GraphBuilder::declare_unused_parameter(TensorId parameter) {
  TensorInfo& info = graph_.tensor(parameter);
  if (info.role != TensorRole::kParameter) {
    throw UsageError("declare_unused_parameter: '" + info.name + "' is not a parameter");
  }
  info.unused_this_step = true;
}

TensorId GraphBuilder::linear(TensorId x, TensorId weight, TensorId bias) {
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> ws = shape(weight);
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    throw UsageError("linear: input " + shape_text(xs) + " does not fit weight " + shape_text(ws));
  }
  std::vector<int64_t> out_shape = xs;
  out_shape.back() = ws[0];
  const int64_t rows = product(xs, 0, xs.size() - 1);
  if (bias != kNoTensor && shape(bias) != std::vector<int64_t>{ws[0]}) {
    throw UsageError("linear: bias must have shape (out)");
  }
  // The bias is the GEMM's third input, in the result's dtype: devices add it in the GEMM's epilogue instead
  // of a pass of its own.
  std::vector<TensorId> inputs{in_compute_dtype(x), in_compute_dtype(weight)};
  if (bias != kNoTensor) inputs.push_back(in_compute_dtype(bias));
  TensorId out = activation(next_name("linear"), out_shape);
  graph_.add_node(Node{"gemm", inputs, {out},
                       {{"transpose_a", 0}, {"transpose_b", 1}, {"m", double(rows)}, {"n", double(ws[0])},
                        {"k", double(ws[1])}, {"alpha", 1.0}, {"batch", 1}},
                       false});
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
                       {{"transpose_a", transpose_a ? 1.0 : 0.0}, {"transpose_b", transpose_b ? 1.0 : 0.0},
                        {"m", double(m)}, {"n", double(n)}, {"k", double(k)}, {"alpha", alpha},
                        {"batch", double(product(as, 0, r - 2))}},
                       false});
  return out;
}

TensorId GraphBuilder::add(TensorId a, TensorId b) {
  a = in_compute_dtype(a);
  b = in_compute_dtype(b);
  if (shape(a) != shape(b)) throw UsageError("add: shapes " + shape_text(shape(a)) + " and " + shape_text(shape(b)));
  TensorId out = activation(next_name("add"), shape(a));
  graph_.add_node(Node{"add", {a, b}, {out}, {{"n", double(graph_.tensor(a).elements())}}, false});
  return out;
}

TensorId GraphBuilder::elementwise(const std::string& op, TensorId x) {
  x = in_compute_dtype(x);
  TensorId out = activation(next_name(op), shape(x));
  graph_.add_node(Node{op, {x}, {out}, {{"n", double(graph_.tensor(x).elements())}}, false});
  return out;
}

TensorId GraphBuilder::gelu(TensorId x) { return elementwise("gelu", x); }
TensorId GraphBuilder::relu(TensorId x) { return elementwise("relu", x); }
TensorId GraphBuilder::tanh(TensorId x) { return elementwise("tanh", x); }

TensorId GraphBuilder::layernorm(TensorId x, TensorId gamma, TensorId beta, double epsilon) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> feature{xs.back()};
  if (shape(gamma) != feature || shape(beta) != feature) throw UsageError("layernorm: gamma/beta must be (features)");
  const int64_t rows = product(xs, 0, xs.size() - 1);
  TensorId out = activation(next_name("layernorm"), xs);
  TensorId mean = activation(next_name("layernorm_mean"), {rows}, DType::kFloat32);
  TensorId rstd = activation(next_name("layernorm_rstd"), {rows}, DType::kFloat32);
  graph_.add_node(Node{"layernorm", {x, gamma, beta}, {out, mean, rstd},
                       {{"rows", double(rows)}, {"cols", double(xs.back())}, {"epsilon", epsilon}}, false});
  return out;
}

TensorId GraphBuilder::embedding(TensorId ids, TensorId table, int64_t padding_idx) {
  if (graph_.tensor(ids).dtype != DType::kInt32) throw UsageError("embedding: ids must be int32");
  // The kernel reads an fp32 table (a parameter); a bf16 activation gathered by rows (BERT's masked
  // positions) is cast first.
  table = converted(table, DType::kFloat32);
  const std::vector<int64_t> ts = shape(table);
  if (ts.size() != 2) throw UsageError("embedding: table must be (vocab, dim)");
  std::vector<int64_t> out_shape = shape(ids);
  out_shape.push_back(ts[1]);
  TensorId out = activation(next_name("embedding"), out_shape);
  graph_.add_node(Node{"embedding", {ids, table}, {out},
                       {{"tokens", double(graph_.tensor(ids).elements())}, {"dim", double(ts[1])},
                        {"vocab", double(ts[0])}, {"padding_idx", double(padding_idx)}},
                       false});
  return out;
}

TensorId GraphBuilder::masked_softmax(TensorId scores, double scale, TensorId key_lengths, bool causal) {
  scores = in_compute_dtype(scores);
  const std::vector<int64_t> s = shape(scores);
  if (s.size() != 4) throw UsageError("masked_softmax: scores must be (batch, heads, q, k)");
  if (key_lengths != kNoTensor &&
      (graph_.tensor(key_lengths).dtype != DType::kInt32 || shape(key_lengths) != std::vector<int64_t>{s[0]})) {
    throw UsageError("masked_softmax: key_lengths must be int32 (batch)");
  }
  TensorId out = activation(next_name("softmax"), s);
  std::vector<TensorId> inputs{scores};
  if (key_lengths != kNoTensor) inputs.push_back(key_lengths);
  graph_.add_node(Node{"masked_softmax", inputs, {out},
                       {{"batch", double(s[0])}, {"heads", double(s[1])}, {"q", double(s[2])}, {"k", double(s[3])},
                        {"scale", scale}, {"causal", causal ? 1.0 : 0.0}},
                       false});
  return out;
}

TensorId GraphBuilder::softmax_cross_entropy(TensorId logits, TensorId targets, double label_smoothing,
                                             int64_t ignore_index) {
  logits = in_compute_dtype(logits);
  const std::vector<int64_t> ls = shape(logits);
  const int64_t rows = product(ls, 0, ls.size() - 1);
  if (graph_.tensor(targets).dtype != DType::kInt32 || graph_.tensor(targets).elements() != rows) {
    throw UsageError("softmax_cross_entropy: targets must be int32 with one entry per logits row");
  }
  TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  TensorId logsumexp = activation(next_name("logsumexp"), {rows}, DType::kFloat32);
  TensorId row_losses = activation(next_name("row_losses"), {rows}, DType::kFloat32);
  graph_.add_node(Node{"softmax_cross_entropy", {logits, targets}, {loss, logsumexp, row_losses},
                       {{"rows", double(rows)}, {"classes", double(ls.back())},
                        {"label_smoothing", label_smoothing}, {"ignore_index", double(ignore_index)}},
                       false});
  return loss;
}

TensorId GraphBuilder::span_loss(TensorId start_logits, TensorId end_logits, TensorId start_positions,
                                 TensorId end_positions) {
  start_logits = in_compute_dtype(start_logits);
  end_logits = in_compute_dtype(end_logits);
  const std::vector<int64_t> ss = shape(start_logits);
  if (ss.size() != 2 || shape(end_logits) != ss) {
    throw UsageError("span_loss: start and end logits must both be (batch, seq), got " + shape_text(ss) + " and " +
                     shape_text(shape(end_logits)));
  }
  for (TensorId positions : {start_positions, end_positions}) {
    if (graph_.tensor(positions).dtype != DType::kInt32 || shape(positions) != std::vector<int64_t>{ss[0]}) {
      throw UsageError("span_loss: start and end positions must be int32 (batch)");
    }
  }
  // The loss and its statistics are fp32 whatever the logits' element type (the kernels' convention).
  TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  TensorId logsumexp = activation(next_name("span_logsumexp"), {2, ss[0]}, DType::kFloat32);
  TensorId row_losses = activation(next_name("span_row_losses"), {2, ss[0]}, DType::kFloat32);
  graph_.add_node(Node{"span_loss", {start_logits, end_logits, start_positions, end_positions},
                       {loss, logsumexp, row_losses}, {{"batch", double(ss[0])}, {"seq", double(ss[1])}}, false});
  return loss;
}

TensorId GraphBuilder::dropout(TensorId x, double probability) {
  if (probability < 0 || probability >= 1) throw UsageError("dropout probability must be in [0, 1)");
  if (probability == 0 || !dropout_enabled_) return x;
  x = in_compute_dtype(x);
  const int64_t n = graph_.tensor(x).elements();
  TensorId out = activation(next_name("dropout"), shape(x));

  // Philox blocks of four values: this node's range starts where the previous dropout's ended.
  graph_.add_node(Node{"dropout", {x}, {out},
                       {{"n", double(n)}, {"p", probability}, {"block_offset", double(dropout_blocks_)}}, false});
  dropout_blocks_ += (n + 3) / 4;
  return out;
}

TensorId GraphBuilder::add_losses(TensorId a, TensorId b, double weight_b) {
  if (shape(a) != std::vector<int64_t>{1} || shape(b) != std::vector<int64_t>{1}) {
    throw UsageError("add_losses: both operands must be one-element losses");
  }
  if (!(weight_b > 0)) throw UsageError("add_losses: the weight of the second loss must be > 0");
  TensorId out = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(out).read_after_step = true;
  NodeAttributes attributes{{"n", 1.0}, {"loss_sum", 1.0}};
  if (weight_b != 1.0) attributes["weight_b"] = weight_b;  // a plain sum keeps the plain add kernel
  graph_.add_node(Node{"add", {a, b}, {out}, attributes, false});
  return out;
}

TensorId GraphBuilder::scale(TensorId x, double factor) {
  x = in_compute_dtype(x);
  TensorId out = activation(next_name("scale"), shape(x));
  graph_.add_node(Node{"scale", {x}, {out}, {{"n", double(graph_.tensor(x).elements())}, {"factor", factor}}, false});
  return out;
}

TensorId GraphBuilder::add_broadcast(TensorId x, TensorId table) {
  x = in_compute_dtype(x);
  table = converted(table, DType::kFloat32);  // the kernel reads the table as fp32 (a parameter or a lookup)
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> ts = shape(table);
  if (ts.size() > xs.size() || !std::equal(ts.rbegin(), ts.rend(), xs.rbegin())) {
    throw UsageError("add_broadcast: " + shape_text(ts) + " is not a trailing block of " + shape_text(xs));
  }
  const int64_t block = graph_.tensor(table).elements();
  TensorId out = activation(next_name("add_broadcast"), xs);
  graph_.add_node(Node{"add_broadcast", {x, table}, {out},
                       {{"repeats", double(graph_.tensor(x).elements() / block)}, {"block", double(block)}}, false});
  return out;
}

TensorId GraphBuilder::swap_middle(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() != 4) throw UsageError("swap_middle: needs a 4-dimensional tensor, got " + shape_text(xs));
  TensorId out = activation(next_name("swap"), {xs[0], xs[2], xs[1], xs[3]});
  graph_.add_node(Node{"swap_middle", {x}, {out},
                       {{"a", double(xs[0])}, {"b", double(xs[1])}, {"c", double(xs[2])}, {"d", double(xs[3])}},
                       false});
  return out;
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

TensorId GraphBuilder::select_column(TensorId x, int64_t column) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() < 2 || column < 0 || column >= xs.back()) {
    throw UsageError("select_column: column " + std::to_string(column) + " of " + shape_text(xs));
  }
  TensorId out =
      activation(next_name("column"), std::vector<int64_t>(xs.begin(), xs.end() - 1), graph_.tensor(x).dtype);
  graph_.add_node(Node{"select_column", {x}, {out},
                       {{"rows", double(product(xs, 0, xs.size() - 1))}, {"cols", double(xs.back())},
                        {"column", double(column)}},
                       false});
  return out;
}

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

}  // namespace sb
