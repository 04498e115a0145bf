// Input gradients as forward nodes (include/scalebench/autodiff.h: append_input_gradient). The same backward
// rules as append_backward, walked from a unit seed instead of a loss, restricted to tensors between x and the
// output, and emitted as forward nodes so that the gradient can sit inside a loss that is differentiated again.
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "src/core/ops/backward_rule.h"

namespace sb {
namespace {

using detail::Contribution;

class InputGradient {
 public:
  InputGradient(Graph& graph, TensorId output, TensorId x)
      : graph_(graph), output_(output), x_(x),
        context_(graph, [this](TensorId id) { return on_path(id); }, /*as_forward=*/true) {
    forward_.assign(graph.nodes().begin(), graph.nodes().end());
    const size_t tensors = graph.tensors().size();
    depends_on_x_.assign(tensors, false);
    output_depends_.assign(tensors, false);
    contributions_.resize(tensors);
  }

  TensorId run() {
    if (!dtype_is_floating(graph_.tensor(x_).dtype)) {
      throw UsageError("input gradient: '" + graph_.tensor(x_).name + "' is not floating-point");
    }
    mark_paths();
    if (!depends_on_x_[static_cast<size_t>(output_)]) {
      throw UsageError("input gradient: '" + graph_.tensor(output_).name + "' does not depend on '" +
                       graph_.tensor(x_).name + "'");
    }
    // d sum(output) / d output = 1 everywhere: a node without inputs, which autodiff treats as a constant.
    const TensorId seed = context_.gradient_like(output_, "_seed");
    context_.emit(Node{"fill", {}, {seed}, {{"n", double(graph_.tensor(seed).elements())}, {"value", 1.0}}});
    contributions_[static_cast<size_t>(output_)].push_back({seed, true});
    for (size_t i = forward_.size(); i-- > 0;) {
      const Node& node = forward_[i];
      std::vector<TensorId> dout;
      bool any = false;
      for (TensorId out : node.outputs) {
        dout.push_back(on_path(out) ? gradient_of(out) : kNoTensor);
        any = any || dout.back() != kNoTensor;
      }
      if (!any) continue;
      const detail::BackwardRule* rule = detail::find_backward_rule(node.op);
      if (rule == nullptr) throw UsageError("op '" + node.op + "' has no backward rule");
      const std::vector<Contribution> inputs = (*rule)(context_, node, dout);
      for (size_t j = 0; j < node.inputs.size() && j < inputs.size(); ++j) {
        if (inputs[j].tensor != kNoTensor && on_path(node.inputs[j])) {
          contributions_[static_cast<size_t>(node.inputs[j])].push_back(inputs[j]);
        }
      }
    }
    const TensorId gradient = gradient_of(x_);
    if (gradient == kNoTensor) throw UsageError("input gradient: no rule passed a gradient back to the input");
    return gradient;
  }

 private:
  bool on_path(TensorId id) const {
    const auto i = static_cast<size_t>(id);
    return i < depends_on_x_.size() && depends_on_x_[i] && output_depends_[i] &&
           dtype_is_floating(graph_.tensor(id).dtype);
  }

  // Forward: what x reaches; backward: what the output reads. A gradient flows exactly through both.
  void mark_paths() {
    depends_on_x_[static_cast<size_t>(x_)] = true;
    for (const Node& node : forward_) {
      bool reached = false;
      for (TensorId in : node.inputs) reached = reached || depends_on_x_[static_cast<size_t>(in)];
      if (!reached) continue;
      for (TensorId out : node.outputs) depends_on_x_[static_cast<size_t>(out)] = true;
    }
    output_depends_[static_cast<size_t>(output_)] = true;
    for (size_t i = forward_.size(); i-- > 0;) {
      const Node& node = forward_[i];
      bool feeds = false;
      for (TensorId out : node.outputs) feeds = feeds || output_depends_[static_cast<size_t>(out)];
      if (!feeds) continue;
      for (TensorId in : node.inputs) output_depends_[static_cast<size_t>(in)] = true;
    }
  }

  // Every consumer of a tensor comes after its producer, so in the reverse walk all contributions are in
  // when the producer is reached: one is the gradient itself, several are summed by an add_n node.
  TensorId gradient_of(TensorId id) {
    auto& list = contributions_[static_cast<size_t>(id)];
    if (list.empty()) return kNoTensor;
    if (list.size() == 1) return list[0].tensor;
    const TensorId sum = context_.gradient_like(id, "_sum");
    Node node{"add_n", {}, {sum}, {{"n", double(graph_.tensor(sum).elements())}}};
    for (const Contribution& c : list) node.inputs.push_back(c.tensor);
    context_.emit(node);
    list = {{sum, true}};
    return sum;
  }

  Graph& graph_;
  TensorId output_, x_;
  detail::BackwardContext context_;
  std::vector<Node> forward_;
  std::vector<bool> depends_on_x_, output_depends_;
  std::vector<std::vector<Contribution>> contributions_;
};

}  // namespace

TensorId append_input_gradient(Graph& graph, TensorId output, TensorId x) {
  return InputGradient(graph, output, x).run();
}

}  // namespace sb
