// The backward pass's own parameter copies (src/core/backward_parameter_copies.h).
#include "src/core/backward_parameter_copies.h"

#include <map>
#include <vector>

namespace sb {
namespace {

class BackwardCopies {
 public:
  explicit BackwardCopies(Graph& graph) : graph_(graph), inserted_before_(graph.nodes().size()) {
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      const Node& node = graph.nodes()[n];
      if (node.backward || node.op != "cast" || node.inputs.size() != 1 || node.outputs.size() != 1) continue;
      if (held_by_parameter(node.inputs[0])) casts_[node.outputs[0]] = n;
    }
  }

  size_t run() {
    std::vector<Node> nodes = graph_.nodes();
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!nodes[n].backward) continue;
      for (TensorId& input : nodes[n].inputs) {
        if (held_by_parameter(input)) input = backward_copy(input, n);
      }
    }
    std::vector<Node> rewritten;
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (Node& cast : inserted_before_[n]) rewritten.push_back(std::move(cast));
      rewritten.push_back(std::move(nodes[n]));
    }
    graph_.set_nodes(std::move(rewritten));
    return parameters_;
  }

 private:
  // A parameter, a view of one, or what a forward cast made of one: bytes the forward pass holds only because the
  // parameter is there.
  bool held_by_parameter(TensorId id) const {
    const TensorInfo& info = graph_.tensor(id);
    if (info.view_of != kNoTensor) return held_by_parameter(info.view_of);
    return info.role == TensorRole::kParameter || casts_.count(id) > 0;
  }

  // The backward pass's copy of `id`, made for node `reader`, the first backward node reading it (the nodes are
  // visited in order): a cast's copy is computed just before it.
  TensorId backward_copy(TensorId id, size_t reader) {
    const auto known = copies_.find(id);
    if (known != copies_.end()) return known->second;
    TensorInfo info = graph_.tensor(id);  // by value: add_tensor may move the list
    info.name += "@backward";
    info.read_after_step = false;
    if (info.view_of != kNoTensor) {
      info.view_of = backward_copy(info.view_of, reader);
    } else if (info.role == TensorRole::kParameter) {
      info.role = TensorRole::kActivation;
      info.parameter_copy_of = id;
      info.unused_this_step = false;
      info.parameter_group.clear();
      ++parameters_;
    } else {
      Node cast = graph_.nodes()[casts_.at(id)];
      cast.inputs[0] = backward_copy(cast.inputs[0], reader);
      cast.backward = true;
      const TensorId copy = graph_.add_tensor(info);
      cast.outputs[0] = copy;
      inserted_before_[reader].push_back(std::move(cast));
      return copies_[id] = copy;
    }
    return copies_[id] = graph_.add_tensor(info);
  }

  Graph& graph_;
  std::map<TensorId, size_t> casts_;   // a forward cast's output of a parameter (or of a cast of one): its node
  std::map<TensorId, TensorId> copies_;
  std::vector<std::vector<Node>> inserted_before_;  // by node index of the rewritten list's original nodes
  size_t parameters_ = 0;
};

}  // namespace

size_t give_backward_its_own_parameter_copies(Graph& graph) { return BackwardCopies(graph).run(); }

bool casts_a_backward_copy(const Graph& graph, const Node& node) {
  return node.op == "cast" && graph.tensor(node.inputs[0]).parameter_copy_of != kNoTensor;
}

}  // namespace sb
