// GraphBuilder's SAN answer-module ops (include/scalebench/graph_builder.h, src/cpu/san.h). Besides the
// sizes, each node carries `matmul_flops`: the multiply-adds inside the op (GRU gates, projections, scores
// and weighted sums) count in matmul_flops(graph) like gemm nodes; backward nodes carry twice the forward's.
// Shapes are copied, not referenced: adding a tensor may reallocate the graph's tensor list. The kernels are
// fp32 only: floating inputs go through converted(x, fp32), a no-op in an fp32 graph and one cached cast per
// tensor in a bf16 one (the cast's backward rule returns the gradient in the tensor's own dtype).
#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"

namespace sb {
namespace {

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + ")";
}

void expect_shape(const Graph& graph, const char* op, const char* what, TensorId id,
                  const std::vector<int64_t>& expected, DType dtype = DType::kFloat32) {
  const TensorInfo& info = graph.tensor(id);
  if (info.shape != expected || info.dtype != dtype) {
    throw UsageError(std::string(op) + ": " + what + " must be " + dtype_name(dtype) + " " + shape_text(expected) +
                     ", got " + dtype_name(info.dtype) + " " + shape_text(info.shape));
  }
}

// Leading dimensions of a (B, L, H) memory, checked.
void memory_dims(const Graph& graph, const char* op, TensorId memory, int64_t& batch, int64_t& length,
                 int64_t& hidden) {
  const TensorInfo& info = graph.tensor(memory);
  if (info.shape.size() != 3 || info.dtype != DType::kFloat32) {
    throw UsageError(std::string(op) + ": memory must be fp32 (B, L, H), got " + shape_text(info.shape));
  }
  batch = info.shape[0];
  length = info.shape[1];
  hidden = info.shape[2];
}

}  // namespace

TensorId GraphBuilder::gru_cell(TensorId x, TensorId h, TensorId w_ih, TensorId w_hh, TensorId b_ih, TensorId b_hh) {
  x = converted(x, DType::kFloat32);
  h = converted(h, DType::kFloat32);
  const std::vector<int64_t> xs = shape(x);
  const std::vector<int64_t> hs = shape(h);
  if (xs.size() != 2 || hs.size() != 2 || xs[0] != hs[0]) {
    throw UsageError("gru_cell: x (B, I) and h (B, H) expected, got " + shape_text(xs) + " and " + shape_text(hs));
  }
  const int64_t batch = xs[0], in = xs[1], hidden = hs[1];
  expect_shape(graph_, "gru_cell", "x", x, xs);
  expect_shape(graph_, "gru_cell", "h", h, hs);
  expect_shape(graph_, "gru_cell", "w_ih", w_ih, {3 * hidden, in});
  expect_shape(graph_, "gru_cell", "w_hh", w_hh, {3 * hidden, hidden});
  expect_shape(graph_, "gru_cell", "b_ih", b_ih, {3 * hidden});
  expect_shape(graph_, "gru_cell", "b_hh", b_hh, {3 * hidden});
  const TensorId next = activation(next_name("gru_cell"), {batch, hidden}, DType::kFloat32);
  const TensorId gates = activation(next_name("gru_gates"), {batch, 4 * hidden}, DType::kFloat32);
  graph_.add_node(Node{"gru_cell", {x, h, w_ih, w_hh, b_ih, b_hh}, {next, gates},
                       {{"batch", double(batch)}, {"input_size", double(in)}, {"hidden_size", double(hidden)},
                        {"matmul_flops", 2.0 * batch * 3 * hidden * (in + hidden)}},
                       false});
  return next;
}

TensorId GraphBuilder::san_self_attention(TensorId memory, TensorId mask, TensorId weight, TensorId bias) {
  memory = converted(memory, DType::kFloat32);
  int64_t batch = 0, length = 0, hidden = 0;
  memory_dims(graph_, "san_self_attention", memory, batch, length, hidden);
  expect_shape(graph_, "san_self_attention", "mask", mask, {batch, length}, DType::kUInt8);
  expect_shape(graph_, "san_self_attention", "weight", weight, {1, hidden});
  expect_shape(graph_, "san_self_attention", "bias", bias, {1});
  const TensorId summary = activation(next_name("san_self_attention"), {batch, hidden}, DType::kFloat32);
  const TensorId alpha = activation(next_name("san_self_alpha"), {batch, length}, DType::kFloat32);
  graph_.add_node(Node{"san_self_attention", {memory, mask, weight, bias}, {summary, alpha},
                       {{"batch", double(batch)}, {"length", double(length)}, {"hidden", double(hidden)},
                        {"matmul_flops", 2.0 * 2 * batch * length * hidden}},
                       false});
  return summary;
}

TensorId GraphBuilder::san_bilinear_attention(TensorId keys, TensorId values, TensorId state, TensorId mask,
                                              TensorId weight, TensorId bias) {
  keys = converted(keys, DType::kFloat32);
  values = converted(values, DType::kFloat32);
  state = converted(state, DType::kFloat32);
  int64_t batch = 0, length = 0, memory_hidden = 0;
  memory_dims(graph_, "san_bilinear_attention", keys, batch, length, memory_hidden);
  expect_shape(graph_, "san_bilinear_attention", "values", values, shape(keys));
  const std::vector<int64_t> ss = shape(state);
  if (ss.size() != 2 || ss[0] != batch) {
    throw UsageError("san_bilinear_attention: state must be (B, Hs), got " + shape_text(ss));
  }
  const int64_t state_hidden = ss[1];
  expect_shape(graph_, "san_bilinear_attention", "state", state, ss);
  expect_shape(graph_, "san_bilinear_attention", "mask", mask, {batch, length}, DType::kUInt8);
  expect_shape(graph_, "san_bilinear_attention", "weight", weight, {memory_hidden, state_hidden});
  expect_shape(graph_, "san_bilinear_attention", "bias", bias, {memory_hidden});
  const TensorId summary = activation(next_name("san_bilinear_attention"), {batch, memory_hidden}, DType::kFloat32);
  const TensorId projection =
      activation(next_name("san_bilinear_projection"), {batch, memory_hidden}, DType::kFloat32);
  const TensorId alpha = activation(next_name("san_bilinear_alpha"), {batch, length}, DType::kFloat32);
  graph_.add_node(Node{"san_bilinear_attention", {keys, values, state, mask, weight, bias},
                       {summary, projection, alpha},
                       {{"batch", double(batch)}, {"length", double(length)},
                        {"memory_hidden", double(memory_hidden)}, {"state_hidden", double(state_hidden)},
                        {"matmul_flops", 2.0 * batch * memory_hidden * (state_hidden + 2 * length)}},
                       false});
  return summary;
}

TensorId GraphBuilder::san_merge(TensorId x, TensorId s) {
  x = converted(x, DType::kFloat32);
  s = converted(s, DType::kFloat32);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() != 2) throw UsageError("san_merge: x must be (B, H), got " + shape_text(xs));
  expect_shape(graph_, "san_merge", "x", x, xs);
  expect_shape(graph_, "san_merge", "s", s, xs);
  const TensorId features = activation(next_name("san_merge"), {xs[0], 4 * xs[1]}, DType::kFloat32);
  graph_.add_node(Node{"san_merge", {x, s}, {features}, {{"batch", double(xs[0])}, {"hidden", double(xs[1])}}, false});
  return features;
}

TensorId GraphBuilder::san_turn_mask(int64_t batch, int64_t turns, double drop_p) {
  if (drop_p < 0 || drop_p >= 1) throw UsageError("san_turn_mask: drop_p must be in [0, 1)");
  if (batch < 1 || turns < 1) throw UsageError("san_turn_mask: batch and turns must be >= 1");
  if (!dropout_enabled_) drop_p = 0;
  const int64_t n = batch * (turns + 1);  // K keep/drop draws and one forced turn per row
  const TensorId uniforms = activation(next_name("san_turn_uniforms"), {batch, turns + 1}, DType::kFloat32);
  const TensorId mask = activation(next_name("san_turn_mask"), {batch, turns}, DType::kFloat32);
  graph_.add_node(Node{"san_turn_mask", {}, {uniforms, mask},
                       {{"batch", double(batch)}, {"turns", double(turns)}, {"p", drop_p}, {"n", double(n)},
                        {"block_offset", double(dropout_blocks_)}},
                       false});
  dropout_blocks_ += (n + 3) / 4;
  return mask;
}

TensorId GraphBuilder::san_turn_average(TensorId turn_logits, TensorId turn_mask) {
  turn_logits = converted(turn_logits, DType::kFloat32);
  turn_mask = converted(turn_mask, DType::kFloat32);
  const std::vector<int64_t> ls = shape(turn_logits);
  if (ls.size() != 3) throw UsageError("san_turn_average: turn_logits must be (K, B, C), got " + shape_text(ls));
  expect_shape(graph_, "san_turn_average", "turn_logits", turn_logits, ls);
  expect_shape(graph_, "san_turn_average", "turn_mask", turn_mask, {ls[1], ls[0]});
  const TensorId scores = activation(next_name("san_scores"), {ls[1], ls[2]}, DType::kFloat32);
  const TensorId probs = activation(next_name("san_turn_probs"), ls, DType::kFloat32);
  graph_.add_node(Node{"san_turn_average", {turn_logits, turn_mask}, {scores, probs},
                       {{"turns", double(ls[0])}, {"batch", double(ls[1])}, {"classes", double(ls[2])}}, false});
  return scores;
}

}  // namespace sb
