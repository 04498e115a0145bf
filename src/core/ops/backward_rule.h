// Backward rules: for one forward node, append the nodes computing its inputs' gradients. Internal to
// autodiff; one rule per forward op name.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scalebench/graph.h"

namespace sb::detail {

struct Contribution {
  TensorId tensor = kNoTensor;
  bool fresh = false;  // written only for this input (may become the gradient itself), not an alias
};

class BackwardContext {
 public:
  // `as_forward`: the emitted nodes are forward nodes (backward = false) that a later append_backward
  // differentiates again: append_input_gradient's gradients inside a loss (R1, autodiff.h).
  BackwardContext(Graph& graph, std::function<bool(TensorId)> needs_gradient, bool as_forward = false)
      : graph_(graph), needs_gradient_(std::move(needs_gradient)), as_forward_(as_forward) {}
  Graph& graph() { return graph_; }
  // False for data inputs and for tensors the loss does not depend on: their gradients are never computed.
  bool needs_gradient(TensorId id) const { return needs_gradient_(id); }
  // A new activation shaped like `like`, named after it.
  TensorId gradient_like(TensorId like, const std::string& suffix = "");
  // The backward node already emitted that writes `id`, or nullptr.
  const Node* backward_producer(TensorId id) const;
  void emit(Node node);

 private:
  Graph& graph_;
  std::function<bool(TensorId)> needs_gradient_;
  bool as_forward_ = false;
};

// Given the node and the gradients of its outputs (kNoTensor where an output does not reach the loss),
// returns one contribution per input (tensor kNoTensor: not differentiable or not needed).
using BackwardRule =
    std::function<std::vector<Contribution>(BackwardContext&, const Node&, const std::vector<TensorId>&)>;

// The rule of op's OpDef row (src/core/ops/op_registry.h); nullptr for an op without one.
const BackwardRule* find_backward_rule(const std::string& op);
// Ops whose outputs are detached from their inputs (OpDef::detached; torch's .detach(): stop_gradient, Mask
// R-CNN's anchors, proposals and target assignment): their outputs require no gradient, and autodiff neither
// waits for gradients through them nor counts them as uses of their inputs.
bool detached_op(const std::string& op);

}  // namespace sb::detail
