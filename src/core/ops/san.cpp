// The SAN family (gru_cell, san_self_attention, san_bilinear_attention, san_merge, san_turn_mask,
// san_turn_average and their backward ops): the stochastic answer network's answer module (src/cpu/san.h), its
// GraphBuilder methods, backward rules and ops' rows. Kernels: src/cpu/san.cpp, src/cuda/san.cu.
// Besides the sizes, each node carries `matmul_flops`: the multiply-adds inside the op (GRU gates, projections,
// scores and weighted sums) count in matmul_flops(graph) like gemm nodes; backward nodes carry twice the
// forward's. Shapes are copied, not referenced: adding a tensor may reallocate the graph's tensor list. The
// kernels are fp32 only: floating inputs go through converted(x, fp32), a no-op in an fp32 graph and one cached
// cast per tensor in a bf16 one (the cast's backward rule returns the gradient in the tensor's own dtype).
#include "src/core/ops/san.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/op_helpers.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const GruCellParams& p) {
  return {{"batch", double(p.batch)}, {"input_size", double(p.input_size)}, {"hidden_size", double(p.hidden_size)},
          {"matmul_flops", 2.0 * p.batch * 3 * p.hidden_size * (p.input_size + p.hidden_size)}};
}

GruCellParams gru_cell_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "input_size")),
          static_cast<int64_t>(ops::attribute(node, "hidden_size"))};
}

NodeAttributes encode(const SanSelfAttentionParams& p) {
  return {{"batch", double(p.batch)}, {"length", double(p.length)}, {"hidden", double(p.hidden)},
          {"matmul_flops", 2.0 * 2 * p.batch * p.length * p.hidden}};
}

SanSelfAttentionParams san_self_attention_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "length")),
          static_cast<int64_t>(ops::attribute(node, "hidden"))};
}

NodeAttributes encode(const SanBilinearAttentionParams& p) {
  return {{"batch", double(p.batch)}, {"length", double(p.length)}, {"memory_hidden", double(p.memory_hidden)},
          {"state_hidden", double(p.state_hidden)},
          {"matmul_flops", 2.0 * p.batch * p.memory_hidden * (p.state_hidden + 2 * p.length)}};
}

SanBilinearAttentionParams san_bilinear_attention_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "length")),
          static_cast<int64_t>(ops::attribute(node, "memory_hidden")),
          static_cast<int64_t>(ops::attribute(node, "state_hidden"))};
}

NodeAttributes encode(const SanTurnMaskParams& p) {
  return {{"batch", double(p.batch)}, {"turns", double(p.turns)}, {"p", p.drop_p}, {"n", double(p.n)},
          {"block_offset", double(p.block_offset)}};
}

SanTurnMaskParams san_turn_mask_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "batch")), static_cast<int64_t>(ops::attribute(node, "turns")),
          ops::attribute(node, "p"), static_cast<int64_t>(ops::attribute(node, "n")),
          static_cast<int64_t>(ops::attribute(node, "block_offset"))};
}

NodeAttributes encode(const SanTurnAverageParams& p) {
  return {{"turns", double(p.turns)}, {"batch", double(p.batch)}, {"classes", double(p.classes)}};
}

SanTurnAverageParams san_turn_average_params(const Node& node) {
  return {static_cast<int64_t>(ops::attribute(node, "turns")), static_cast<int64_t>(ops::attribute(node, "batch")),
          static_cast<int64_t>(ops::attribute(node, "classes"))};
}

namespace {

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
                       encode(GruCellParams{batch, in, hidden}), false});
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
                       encode(SanSelfAttentionParams{batch, length, hidden}), false});
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
                       encode(SanBilinearAttentionParams{batch, length, memory_hidden, state_hidden}), false});
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
                       encode(SanTurnMaskParams{batch, turns, drop_p, n, dropout_blocks_}), false});
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
                       encode(SanTurnAverageParams{ls[0], ls[1], ls[2]}), false});
  return scores;
}

namespace {

NodeAttributes backward_attributes(const Node& node) {
  NodeAttributes attributes = node.attributes;
  if (attributes.count("matmul_flops") != 0) attributes["matmul_flops"] *= 2;
  return attributes;
}

// Buffers for the gradients of node.inputs[i] for i in `differentiable`; the contributions follow the
// forward's input order, kNoTensor where an input is data or not needed.
struct InputGradients {
  std::vector<TensorId> buffers;
  std::vector<detail::Contribution> contributions;
};

InputGradients input_gradients(detail::BackwardContext& ctx, const Node& node,
                               const std::vector<size_t>& differentiable) {
  InputGradients result;
  result.contributions.assign(node.inputs.size(), detail::Contribution{});
  for (size_t i : differentiable) {
    const TensorId input = node.inputs[i];
    result.buffers.push_back(ctx.gradient_like(input));
    if (ctx.needs_gradient(input)) result.contributions[i] = {result.buffers.back(), true};
  }
  return result;
}

// inputs x, h, w_ih, w_hh, b_ih, b_hh; outputs h_next, saved_gates.
std::vector<detail::Contribution> gru_cell_backward(detail::BackwardContext& ctx, const Node& node,
                                                    const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1, 2, 3, 4, 5});
  const auto& in = node.inputs;
  ctx.emit(Node{"gru_cell_backward", {dout[0], in[0], in[1], in[2], in[3], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs memory, mask, weight, bias; outputs summary, saved_alpha.
std::vector<detail::Contribution> self_attention_backward(detail::BackwardContext& ctx, const Node& node,
                                                          const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 2, 3});
  const auto& in = node.inputs;
  ctx.emit(Node{"san_self_attention_backward", {dout[0], in[0], in[1], in[2], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs keys, values, state, mask, weight, bias; outputs summary, saved_projection, saved_alpha. When keys
// and values are one tensor, its two contributions are summed by autodiff.
std::vector<detail::Contribution> bilinear_attention_backward(detail::BackwardContext& ctx, const Node& node,
                                                              const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1, 2, 4, 5});
  const auto& in = node.inputs;
  ctx.emit(Node{"san_bilinear_attention_backward",
                {dout[0], in[0], in[1], in[2], in[3], in[4], node.outputs[1], node.outputs[2]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs x, s; output features.
std::vector<detail::Contribution> merge_backward(detail::BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0, 1});
  ctx.emit(Node{"san_merge_backward", {dout[0], node.inputs[0], node.inputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

// inputs turn_logits, turn_mask; outputs scores, saved_probs.
std::vector<detail::Contribution> turn_average_backward(detail::BackwardContext& ctx, const Node& node,
                                                        const std::vector<TensorId>& dout) {
  InputGradients g = input_gradients(ctx, node, {0});
  ctx.emit(Node{"san_turn_average_backward", {dout[0], node.inputs[1], node.outputs[1]}, g.buffers,
                backward_attributes(node), true});
  return g.contributions;
}

}  // namespace

const OpDefs& san_ops() {
  // san_turn_mask needs no rule: its outputs never receive a gradient (the turn average treats the mask as
  // data), so autodiff never asks for one.
  static const OpDefs ops = {
      {"gru_cell", "san", OpGradient::kDifferentiable, gru_cell_backward},
      {"san_self_attention", "san", OpGradient::kDifferentiable, self_attention_backward},
      {"san_bilinear_attention", "san", OpGradient::kDifferentiable, bilinear_attention_backward},
      {"san_merge", "san", OpGradient::kDifferentiable, merge_backward},
      {"san_turn_average", "san", OpGradient::kDifferentiable, turn_average_backward},
      {"san_turn_mask", "san", OpGradient::kNotDifferentiable, nullptr},
      {"gru_cell_backward", "san", OpGradient::kNotDifferentiable, nullptr},
      {"san_self_attention_backward", "san", OpGradient::kNotDifferentiable, nullptr},
      {"san_bilinear_attention_backward", "san", OpGradient::kNotDifferentiable, nullptr},
      {"san_merge_backward", "san", OpGradient::kNotDifferentiable, nullptr},
      {"san_turn_average_backward", "san", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
