// BackwardContext (src/core/ops/backward_rule.h): what a backward rule uses to add tensors and nodes.
#include "src/core/ops/backward_rule.h"

#include <utility>

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

}  // namespace sb::detail
