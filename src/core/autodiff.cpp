// Reverse-mode differentiation of the forward graph (include/scalebench/autodiff.h).
#include "scalebench/autodiff.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "scalebench/error.h"
#include "src/core/ops/backward_rule.h"
#include "src/core/ops/embedding.h"
#include "src/core/ops/embedding_rows.h"
#include "src/core/ops/op_registry.h"

namespace sb {
namespace {

using detail::Contribution;

class Differentiator {
 public:
  Differentiator(Graph& graph, TensorId loss, const BackwardOptions& options)
      : graph_(graph),
        context_(graph, [this](TensorId id) { return needs_gradient(id); }),
        loss_(loss),
        options_(options) {
    forward_.assign(graph.nodes().begin(), graph.nodes().end());  // the graph grows while we walk it
    const size_t tensors = graph.tensors().size();
    contributions_.resize(tensors);
    uses_.assign(tensors, 0);
    relevant_.assign(tensors, false);
    mark_requiring_gradient();
  }

  std::map<TensorId, TensorId> run() {
    const int loss_node = find_producer(loss_);
    if (loss_node < 0 || !is_loss_node(forward_[static_cast<size_t>(loss_node)])) {
      throw UsageError("the loss must be the output of a loss op (" + loss_op_names() + ")");
    }
    mark_relevant(loss_node);
    find_tied_tables();
    zero_fill_unused_parameters();
    unit_gradient_.assign(graph_.tensors().size(), false);
    unit_gradient_[static_cast<size_t>(loss_)] = true;
    gradient_weight_.assign(graph_.tensors().size(), 1.0);
    for (int i = loss_node; i >= 0; --i) {
      const Node& node = forward_[static_cast<size_t>(i)];
      if (!node_relevant(node)) continue;
      // Losses and sums of losses receive the unit gradient, which no tensor holds: a sum passes it on to
      // its terms, and a loss op's backward rule starts from it by definition.
      if (unit_gradient_[static_cast<size_t>(node.outputs[0])]) {
        if (!is_loss_node(node)) throw UsageError("op '" + node.op + "' cannot produce a loss");
        if (node.op == "add") {
          // A weighted sum (a + w b) passes the unit gradient times w to b.
          const double weight = gradient_weight_[static_cast<size_t>(node.outputs[0])];
          const auto b_weight = node.attributes.find("weight_b");
          for (size_t k = 0; k < node.inputs.size(); ++k) {
            const auto term = static_cast<size_t>(node.inputs[k]);
            unit_gradient_[term] = true;
            gradient_weight_[term] = weight * (k == 1 && b_weight != node.attributes.end() ? b_weight->second : 1.0);
          }
          continue;
        }
      }
      const bool starts_here = unit_gradient_[static_cast<size_t>(node.outputs[0])];
      std::vector<TensorId> dout;
      bool any = false;
      for (TensorId out : node.outputs) {
        dout.push_back(starts_here ? kNoTensor : gradient_of_activation(out));
        any = any || dout.back() != kNoTensor;
      }
      if (!any && !starts_here) continue;
      const detail::BackwardRule* rule = detail::find_backward_rule(node.op);
      if (rule == nullptr) throw UsageError("op '" + node.op + "' has no backward rule");
      // A loss weighted in a sum starts with that weight instead of 1: its backward node carries it.
      Node weighted = node;
      const double weight = gradient_weight_[static_cast<size_t>(node.outputs[0])];
      if (starts_here && weight != 1.0) weighted.attributes["gradient_weight"] = weight;
      std::vector<Contribution> inputs = (*rule)(context_, weighted, dout);
      for (size_t j = 0; j < node.inputs.size() && j < inputs.size(); ++j) add_contribution(node.inputs[j], inputs[j]);
    }
    for (TensorId p : graph_.tensors_with_role(TensorRole::kParameter)) {
      if (gradients_.count(p) != 0) continue;
      // The loss reads it, but only where its derivative is zero almost everywhere: a bias that moves the kinks
      // of the LeakyReLU masks inside an input gradient (R1 alone, append_input_gradient) and nothing else.
      // PyTorch's backward gives it a zero gradient; so does this, once the walk is over.
      if (relevant_[static_cast<size_t>(p)] && requires_gradient_[static_cast<size_t>(p)]) {
        const TensorId gradient = context_.gradient_like(p);
        context_.emit(Node{"zero_fill", {}, {gradient}, {{"n", double(graph_.tensor(p).elements())}}, true});
        register_gradient(p, gradient);
        continue;
      }
      throw UsageError("parameter '" + graph_.tensor(p).name + "' does not affect the loss");
    }
    return gradients_;
  }

 private:
  static bool differentiable(const TensorInfo& info) { return dtype_is_floating(info.dtype); }

  // Outputs of nodes without inputs (fill: the unit seed of an input gradient, append_input_gradient) are
  // constants like data inputs: a second-order pass must not differentiate the seed.
  bool needs_gradient(TensorId id) const {
    const TensorInfo& info = graph_.tensor(id);
    return static_cast<size_t>(id) < relevant_.size() && relevant_[static_cast<size_t>(id)] &&
           requires_gradient_[static_cast<size_t>(id)] && info.role != TensorRole::kInput &&
           info.role != TensorRole::kState && differentiable(info);
  }

  // PyTorch's requires_grad: parameters, and whatever a forward node computes from a tensor that requires one,
  // except through a detached op (stop_gradient, .detach(); Mask R-CNN's proposals and target assignment,
  // detail::detached_op). A tensor computed from data and frozen weights alone (the VGG pass over the real
  // image, a concat of two inputs, Mask R-CNN's frozen stem and res2) needs no gradient even where the loss
  // depends on it, so no backward node computes one for it: no backward-data pass runs below the first
  // trained layer.
  void mark_requiring_gradient() {
    requires_gradient_.assign(graph_.tensors().size(), false);
    for (TensorId p : graph_.tensors_with_role(TensorRole::kParameter)) requires_gradient_[static_cast<size_t>(p)] = true;
    for (const Node& node : forward_) {
      if (detail::detached_op(node.op)) continue;
      bool any = false;
      for (TensorId in : node.inputs) any = any || requires_gradient_[static_cast<size_t>(in)];
      if (!any) continue;
      for (TensorId out : node.outputs) requires_gradient_[static_cast<size_t>(out)] = true;
    }
  }

  int find_producer(TensorId id) const {
    for (int i = static_cast<int>(forward_.size()) - 1; i >= 0; --i) {
      for (TensorId out : forward_[static_cast<size_t>(i)].outputs) {
        if (out == id) return i;
      }
    }
    return -1;
  }

  // Tensors the loss depends on, and how many times each is used by a node the loss depends on (the
  // number of contributions to wait for before a gradient is complete).
  void mark_relevant(int loss_node) {
    relevant_[static_cast<size_t>(loss_)] = true;
    for (int i = loss_node; i >= 0; --i) {
      const Node& node = forward_[static_cast<size_t>(i)];
      // A detached op's inputs (stop_gradient, Mask R-CNN's proposals and targets) and discard_gradient's get no
      // gradient through them, so nothing before them is relevant on their account (nor counted as a use).
      if (!node_relevant(node) || detail::detached_op(node.op) || node.op == "discard_gradient") continue;
      for (TensorId in : node.inputs) {
        if (!differentiable(graph_.tensor(in))) continue;
        relevant_[static_cast<size_t>(in)] = true;
        ++uses_[static_cast<size_t>(in)];
      }
    }
  }

  bool node_relevant(const Node& node) const {
    for (TensorId out : node.outputs) {
      if (relevant_[static_cast<size_t>(out)]) return true;
    }
    return false;
  }

  void add_contribution(TensorId input, const Contribution& contribution) {
    // A rule may offer a gradient nothing needs (an add over frozen activations): it goes no further.
    if (contribution.tensor == kNoTensor || !differentiable(graph_.tensor(input)) || !needs_gradient(input)) return;
    auto& list = contributions_[static_cast<size_t>(input)];
    list.push_back(contribution);
    const auto tied = tied_.find(input);
    if (tied != tied_.end()) add_tied_contribution(input, tied->second, contribution);
    if (graph_.tensor(input).role == TensorRole::kParameter && static_cast<int>(list.size()) == uses_[static_cast<size_t>(input)]) {
      if (tied != tied_.end()) {
        finalize_tied_table(input, tied->second);
      } else {
        finalize_parameter(input);
      }
    }
  }

  // ---- Tied embedding tables (src/core/ops/embedding_rows.h): grad = dense + late, the two written apart.
  struct TiedTable {
    std::vector<TensorId> ids;  // the lookups' ids, in forward order
    int64_t padding_idx = -1;   // the lookups' common padding_idx, or none when they differ
    int dense_uses = 0;         // contributions from anything but a lookup
    std::vector<Contribution> dense, late;
    TensorId gradient = kNoTensor, dense_part = kNoTensor, flags = kNoTensor, rows = kNoTensor;
  };

  // A trained fp32 table read by embedding lookups and by something else (the output projection): its lookups'
  // gradients arrive last and touch only the batch's rows, the rest early. Each such table gets its flags marked
  // first thing in the backward pass, from the ids alone.
  void find_tied_tables() {
    for (const Node& node : forward_) {
      if (node.op != "embedding" || !node_relevant(node)) continue;
      const TensorId table = node.inputs[1];
      const TensorInfo& info = graph_.tensor(table);
      if (info.role != TensorRole::kParameter || info.dtype != DType::kFloat32 || !needs_gradient(table)) continue;
      TiedTable& tied = tied_[table];
      const int64_t padding = embedding_params(node).padding_idx;
      tied.padding_idx = tied.ids.empty() || tied.padding_idx == padding ? padding : -1;
      tied.ids.push_back(node.inputs[0]);
    }
    for (auto it = tied_.begin(); it != tied_.end();) {
      it->second.dense_uses = uses_[static_cast<size_t>(it->first)] - static_cast<int>(it->second.ids.size());
      const bool split = it->second.dense_uses > 0 && split_wanted(it->first, it->second);  // lookups alone: no
      it = split ? std::next(it) : tied_.erase(it);
    }
    for (auto& [table, tied] : tied_) {
      tied.flags = row_list(table, "_rows_flags");
      context_.emit(Node{"embedding_rows_mark", tied.ids, {tied.flags}, encode(rows_params(table, tied)), true});
    }
  }

  bool split_wanted(TensorId table, const TiedTable& tied) const {
    if (!options_.split_tied_table) return true;
    int64_t ids = 0;
    for (TensorId id : tied.ids) ids += graph_.tensor(id).elements();
    return options_.split_tied_table(graph_.tensor(table).shape[0], ids);
  }

  // An int32 activation with one entry per row of the table (its flags, its row list).
  TensorId row_list(TensorId table, const std::string& suffix) {
    TensorInfo info;
    info.name = "d" + graph_.tensor(table).name + suffix;
    info.shape = {graph_.tensor(table).shape[0]};
    info.dtype = DType::kInt32;
    return graph_.add_tensor(info);
  }

  EmbeddingRowsParams rows_params(TensorId table, const TiedTable& tied) const {
    const TensorInfo& info = graph_.tensor(table);
    return EmbeddingRowsParams{info.shape[0], info.elements() / info.shape[0], tied.padding_idx};
  }

  // Once every non-lookup contribution is in, their sum is written into the gradient's own bytes (a view of it:
  // a single fresh contribution becomes that view, no copy), and the marked rows are listed.
  void add_tied_contribution(TensorId table, TiedTable& tied, const Contribution& contribution) {
    const Node* producer = context_.backward_producer(contribution.tensor);
    const bool lookup = contribution.fresh && producer != nullptr && producer->op == "embedding_backward" &&
                        static_cast<int>(tied.late.size()) < static_cast<int>(tied.ids.size());
    (lookup ? tied.late : tied.dense).push_back(contribution);
    if (lookup || static_cast<int>(tied.dense.size()) != tied.dense_uses) return;
    tied.gradient = context_.gradient_like(table);
    if (tied.dense.size() == 1 && tied.dense[0].fresh) {
      tied.dense_part = tied.dense[0].tensor;
    } else {
      tied.dense_part = sum(tied.dense, context_.gradient_like(table, "_dense"));
    }
    graph_.tensor(tied.dense_part).view_of = tied.gradient;
    tied.rows = row_list(table, "_rows");
    context_.emit(Node{"embedding_rows_compact", {tied.flags}, {tied.rows}, encode(rows_params(table, tied)), true});
  }

  // The lookups' sum (late), its marked rows packed, and added into the dense part in place.
  void finalize_tied_table(TensorId table, TiedTable& tied) {
    if (tied.late.size() != tied.ids.size() || tied.gradient == kNoTensor) {
      throw UsageError("tied table '" + graph_.tensor(table).name + "': " + std::to_string(tied.late.size()) +
                       " lookup gradients for " + std::to_string(tied.ids.size()) + " lookups");
    }
    const TensorId late =
        tied.late.size() == 1 ? tied.late[0].tensor : sum(tied.late, context_.gradient_like(table, "_late"));
    const TensorId packed = context_.gradient_like(table, "_rows_packed");
    const NodeAttributes attributes = encode(rows_params(table, tied));
    context_.emit(Node{"embedding_rows_gather", {late, tied.rows}, {packed}, attributes, true});
    context_.emit(
        Node{"embedding_rows_scatter_add", {tied.dense_part, packed, tied.rows}, {tied.gradient}, attributes, true});
    register_gradient(table, tied.gradient);
  }

  TensorId gradient_of_activation(TensorId id) {
    const auto& list = contributions_[static_cast<size_t>(id)];
    if (list.empty()) return kNoTensor;
    if (list.size() == 1) return list[0].tensor;
    return sum(list, context_.gradient_like(id, "_sum"));
  }

  // Parameters declared unused get their zero gradient before anything else: nothing in the backward pass
  // waits for them, so their bucket may be reduced first.
  void zero_fill_unused_parameters() {
    for (TensorId p : graph_.tensors_with_role(TensorRole::kParameter)) {
      if (!graph_.tensor(p).unused_this_step) continue;
      if (relevant_[static_cast<size_t>(p)]) {
        throw UsageError("parameter '" + graph_.tensor(p).name + "' is declared unused but the loss depends on it");
      }
      const double elements = static_cast<double>(graph_.tensor(p).elements());
      const TensorId gradient = context_.gradient_like(p);
      context_.emit(Node{"zero_fill", {}, {gradient}, {{"n", elements}}, true});
      register_gradient(p, gradient);
    }
  }

  // The gradient of a parameter is its own kGradient tensor: a fresh single contribution is promoted in
  // place (no copy); anything else (tied weights, an aliased contribution) is summed into a new one.
  void finalize_parameter(TensorId parameter) {
    const auto& list = contributions_[static_cast<size_t>(parameter)];
    TensorId gradient;
    if (list.size() == 1 && list[0].fresh) {
      gradient = list[0].tensor;
    } else {
      gradient = sum(list, context_.gradient_like(parameter));
    }
    register_gradient(parameter, gradient);
  }

  void register_gradient(TensorId parameter, TensorId gradient) {
    TensorInfo& info = graph_.tensor(gradient);
    info.role = TensorRole::kGradient;
    info.gradient_of = parameter;
    info.name = "grad." + graph_.tensor(parameter).name;
    gradients_[parameter] = gradient;
  }

  TensorId sum(const std::vector<Contribution>& list, TensorId out) {
    Node node{"add_n", {}, {out}, {{"n", double(graph_.tensor(out).elements())}}, true};
    for (const Contribution& c : list) node.inputs.push_back(c.tensor);
    context_.emit(node);
    return out;
  }

  Graph& graph_;
  detail::BackwardContext context_;
  TensorId loss_;
  BackwardOptions options_;
  std::vector<Node> forward_;
  std::vector<std::vector<Contribution>> contributions_;
  std::vector<int> uses_;
  std::vector<bool> relevant_;
  std::vector<bool> requires_gradient_;  // mark_requiring_gradient
  std::vector<bool> unit_gradient_;
  std::vector<double> gradient_weight_;  // the factor of a loss's unit gradient inside weighted sums
  std::map<TensorId, TensorId> gradients_;
  std::map<TensorId, TiedTable> tied_;
};

}  // namespace

std::map<TensorId, TensorId> append_backward(Graph& graph, TensorId loss, const BackwardOptions& options) {
  return Differentiator(graph, loss, options).run();
}

void recompute_in_backward(Graph& graph, const std::vector<std::string>& ops) {
  for (const std::string& op : ops) {
    // Recomputing is only free of extra liveness when the op's backward already keeps its input.
    if (op != "gelu") throw UsageError("cannot recompute '" + op + "' in the backward pass (only gelu)");
  }
  auto recomputable = [&](const Node& node) {
    return !node.backward && std::find(ops.begin(), ops.end(), node.op) != ops.end();
  };
  std::map<TensorId, const Node*> producer;  // recomputable forward outputs
  for (const Node& node : graph.nodes()) {
    if (recomputable(node)) producer[node.outputs[0]] = &node;
  }
  std::vector<Node> nodes;
  std::map<TensorId, TensorId> recomputed;  // forward output -> its copy made in the backward pass
  for (const Node& node : graph.nodes()) {
    Node copy = node;
    if (node.backward) {
      for (TensorId& input : copy.inputs) {
        auto it = producer.find(input);
        if (it == producer.end()) continue;
        auto done = recomputed.find(input);
        if (done == recomputed.end()) {
          TensorInfo info = graph.tensor(input);
          info.name += ".recomputed";
          Node again = *it->second;
          again.outputs = {graph.add_tensor(info)};
          again.backward = true;
          nodes.push_back(again);
          done = recomputed.emplace(input, again.outputs[0]).first;
        }
        input = done->second;
      }
    }
    nodes.push_back(std::move(copy));
  }
  graph.set_nodes(std::move(nodes));
}

}  // namespace sb
