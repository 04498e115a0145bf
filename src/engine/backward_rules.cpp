// One backward rule per forward op (src/engine/backward_rules.h). Gradient nodes carry the same size
// attributes as the forward node, so executors never infer shapes.
#include "src/core/ops/backward_rule.h"

#include <map>

#include "scalebench/error.h"
#include "src/core/ops/op_bindings.h"
#include "src/core/ops/op_registry.h"

namespace sb::detail {

TensorId BackwardContext::gradient_like(TensorId like, const std::string& suffix) {
  TensorInfo info = graph_.tensor(like);
  info.name = "d" + info.name + suffix;
  info.role = TensorRole::kActivation;
  info.gradient_of = kNoTensor;
  info.unused_this_step = false;
  info.read_after_step = false;
  info.view_of = kNoTensor;
  return graph_.add_tensor(info);  // the forward tensor's dtype: bf16 activations get bf16 gradients
}

const Node* BackwardContext::backward_producer(TensorId id) const {
  const auto& nodes = graph_.nodes();
  for (auto node = nodes.rbegin(); node != nodes.rend() && node->backward; ++node) {
    for (TensorId out : node->outputs) {
      if (out == id) return &*node;
    }
  }
  return nullptr;
}

void BackwardContext::emit(Node node) {
  node.backward = !as_forward_;
  graph_.add_node(std::move(node));
}

namespace {

double attribute(const Node& node, const char* name) { return node.attributes.at(name); }

Node gemm_node(TensorId a, TensorId b, TensorId c, bool ta, bool tb, double m, double n, double k, double alpha,
               double batch) {
  return Node{"gemm", {a, b}, {c},
              {{"transpose_a", ta ? 1.0 : 0.0}, {"transpose_b", tb ? 1.0 : 0.0}, {"m", m}, {"n", n}, {"k", k},
               {"alpha", alpha}, {"batch", batch}},
              true};
}

// C = alpha op(A) op(B) (+ bias): dA and dB are GEMMs of dC with the other operand; which operand is transposed
// depends on the forward's transposes (the four cases below), so that no explicit transpose is ever stored.
std::vector<Contribution> gemm_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId a = node.inputs[0], b = node.inputs[1], dc = dout[0];
  const bool ta = attribute(node, "transpose_a") != 0, tb = attribute(node, "transpose_b") != 0;
  const double m = attribute(node, "m"), n = attribute(node, "n"), k = attribute(node, "k");
  const double alpha = attribute(node, "alpha"), batch = attribute(node, "batch");
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
  ctx.emit(Node{"bias_backward", {dc}, {dbias}, {{"rows", m * batch}, {"cols", n}}, true});
  return {{da, true}, {db, true}, {dbias, true}};
}

std::vector<Contribution> add_backward(BackwardContext&, const Node&, const std::vector<TensorId>& dout) {
  return {{dout[0], false}, {dout[0], false}};
}

// Elementwise activations (an activation's input always needs its gradient when the output does, except for
// a data input, which no workload feeds straight into one): the backward kernel reads the forward input (gelu) or output (relu, tanh),
// whichever the kernel documents, so only that tensor stays alive until the backward pass.
BackwardRule activation_backward(const char* op, bool needs_output) {
  return [op, needs_output](BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
    const TensorId dx = ctx.gradient_like(node.inputs[0]);
    const TensorId saved = needs_output ? node.outputs[0] : node.inputs[0];
    ctx.emit(Node{op, {saved, dout[0]}, {dx}, node.attributes, true});
    return std::vector<Contribution>{{dx, true}};
  };
}

std::vector<Contribution> layernorm_backward(BackwardContext& ctx, const Node& node,
                                             const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0], gamma = node.inputs[1], beta = node.inputs[2];
  const TensorId dx = ctx.gradient_like(x), dgamma = ctx.gradient_like(gamma), dbeta = ctx.gradient_like(beta);
  ctx.emit(Node{"layernorm_backward", {dout[0], x, gamma, node.outputs[1], node.outputs[2]}, {dx, dgamma, dbeta},
                node.attributes, true});
  return {{dx, true}, {dgamma, true}, {dbeta, true}};
}

std::vector<Contribution> embedding_backward(BackwardContext& ctx, const Node& node,
                                             const std::vector<TensorId>& dout) {
  if (!ctx.needs_gradient(node.inputs[1])) return {{kNoTensor, false}, {kNoTensor, false}};  // constant table
  const TensorId dtable = ctx.gradient_like(node.inputs[1]);
  ctx.emit(Node{"embedding_backward", {node.inputs[0], dout[0]}, {dtable}, node.attributes, true});
  return {{kNoTensor, false}, {dtable, true}};
}

std::vector<Contribution> masked_softmax_backward(BackwardContext& ctx, const Node& node,
                                                  const std::vector<TensorId>& dout) {
  const TensorId dscores = ctx.gradient_like(node.inputs[0]);
  std::vector<TensorId> inputs{node.outputs[0], dout[0]};
  if (node.inputs.size() > 1) inputs.push_back(node.inputs[1]);  // key lengths
  ctx.emit(Node{"masked_softmax_backward", inputs, {dscores}, node.attributes, true});
  std::vector<Contribution> result{{dscores, true}};
  if (node.inputs.size() > 1) result.push_back({kNoTensor, false});
  return result;
}

// The loss is where the backward pass starts: its incoming gradient is 1 by definition, so the rule
// ignores dout and the kernel scales by 1 / (rows that count) itself.
std::vector<Contribution> cross_entropy_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>&) {
  const TensorId dlogits = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"softmax_cross_entropy_backward", {node.inputs[0], node.inputs[1], node.outputs[1]}, {dlogits},
                node.attributes, true});
  return {{dlogits, true}, {kNoTensor, false}};
}

// As for cross-entropy, the span loss starts the backward pass with the unit gradient (dloss = 1 in the
// kernel). The kernel writes both logits' gradients, so both tensors exist even where one is not needed.
std::vector<Contribution> span_loss_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
  const TensorId start = node.inputs[0], end = node.inputs[1];
  const TensorId dstart = ctx.gradient_like(start), dend = ctx.gradient_like(end);
  ctx.emit(Node{"span_loss_backward", {start, end, node.inputs[2], node.inputs[3], node.outputs[1]}, {dstart, dend},
                node.attributes, true});
  return {{ctx.needs_gradient(start) ? dstart : kNoTensor, true},
          {ctx.needs_gradient(end) ? dend : kNoTensor, true},
          {kNoTensor, false},
          {kNoTensor, false}};
}

// The column's gradient in place, zeros elsewhere; a tensor split into several columns gets one such
// contribution per column, summed by autodiff.
std::vector<Contribution> select_column_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"select_column_backward", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// A view's gradient is a view of the output gradient with the input's shape. Not fresh: it shares storage,
// so it must never become a parameter's gradient buffer or be written in place.
std::vector<Contribution> view_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.graph().tensor(dx).view_of = dout[0];
  ctx.emit(Node{"view", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, false}};
}

std::vector<Contribution> scale_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"scale", {dout[0]}, {dx}, node.attributes, true});
  return {{dx, true}};
}

// The table's gradient sums the output gradient over the repeats (a column sum, as for a bias).
std::vector<Contribution> add_broadcast_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  TensorId dtable = kNoTensor;
  if (ctx.needs_gradient(node.inputs[1])) {
    dtable = ctx.gradient_like(node.inputs[1]);
    ctx.emit(Node{"bias_backward", {dout[0]}, {dtable},
                  {{"rows", node.attributes.at("repeats")}, {"cols", node.attributes.at("block")}}, true});
  }
  return {{dout[0], false}, {dtable, true}};
}

// Swapping the middle dimensions of (a, c, b, d) restores (a, b, c, d).
std::vector<Contribution> swap_middle_backward(BackwardContext& ctx, const Node& node,
                                               const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  NodeAttributes swapped = node.attributes;
  std::swap(swapped["b"], swapped["c"]);
  ctx.emit(Node{"swap_middle", {dout[0]}, {dx}, swapped, true});
  return {{dx, true}};
}

// dx = dy masked and scaled by the forward's mask, which is the same dropout applied to dy: same node
// attributes, hence the same Philox range this step. No mask is stored between the passes.
std::vector<Contribution> dropout_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
  const TensorId dx = ctx.gradient_like(node.inputs[0]);
  ctx.emit(Node{"dropout", {dout[0]}, {dx}, node.attributes, true});
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

// The gradient of a precision cast is the cast back. Mixed precision casts each fp32 weight and bias to
// bf16 once per step, and that copy's gradient usually comes from a single weight-gradient GEMM or bias
// column sum: then that node writes fp32 directly (the GEMM: bf16 operands, fp32 accumulation and output;
// the column sum accumulates in fp32 anyway) instead of rounding to bf16 and casting back, which keeps
// full-precision parameter gradients and saves a pass over them.
std::vector<Contribution> cast_backward(BackwardContext& ctx, const Node& node, const std::vector<TensorId>& dout) {
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

const BackwardRuleTable& rules() {
  static const BackwardRuleTable table = {
      {"gemm", gemm_backward},
      {"add", add_backward},
      {"gelu", activation_backward("gelu_backward", false)},
      {"relu", activation_backward("relu_backward", true)},
      {"tanh", activation_backward("tanh_backward", true)},
      {"layernorm", layernorm_backward},
      {"embedding", embedding_backward},
      {"masked_softmax", masked_softmax_backward},
      {"softmax_cross_entropy", cross_entropy_backward},
      {"view", view_backward},
      {"span_loss", span_loss_backward},
      {"select_column", select_column_backward},
      {"scale", scale_backward},
      {"add_broadcast", add_broadcast_backward},
      {"swap_middle", swap_middle_backward},
      {"dropout", dropout_backward},
      {"stack", stack_backward},
      {"cast", cast_backward},
  };
  return table;
}

}  // namespace

bool detached_op(const std::string& op) {
  if (const OpDef* def = find_op_def(op)) return def->detached;
  return op == "stop_gradient" || op == "anchor_grid" || op == "rpn_proposals" || op == "rpn_targets" ||
         op == "roi_sample" || op == "mask_targets";
}

// The core table, then the op families kept in their own files. No op is in two tables
// (tests/unit/test_op_catalogue.cpp), so the order decides nothing today.
const std::vector<const BackwardRuleTable*>& backward_rule_tables() {
  static const std::vector<const BackwardRuleTable*> chain = {
      &rules(),
      &cnn_backward_rules(),
      &convs2s_backward_rules(),
      &pix2pixhd_backward_rules(),
      &stylegan_backward_rules(),
      &decode_backward_rules(),  // the last: its rules refuse (generation has no gradient)
  };
  return chain;
}

const BackwardRule* find_backward_rule(const std::string& op) {
  if (const OpDef* def = find_op_def(op)) return def->backward ? &def->backward : nullptr;
  for (const BackwardRuleTable* table : backward_rule_tables()) {
    auto it = table->find(op);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

}  // namespace sb::detail

namespace sb {

std::vector<std::string> backward_rule_ops() {
  std::vector<std::string> names;
  for (const OpDef& op : op_registry()) {
    if (op.backward) names.emplace_back(op.name);
  }
  for (const detail::BackwardRuleTable* table : detail::backward_rule_tables()) {
    for (const auto& entry : *table) names.push_back(entry.first);
  }
  return names;
}

bool has_backward_rule(const std::string& op) { return detail::find_backward_rule(op) != nullptr; }

}  // namespace sb
