// Hand-built graphs for the planner's tests (test_planner.cpp, test_parameter_blocks.cpp): a tensor of a role, and a
// chain of layers whose backward pass finishes one weight gradient after another.
#pragma once

#include <string>
#include <vector>

#include "scalebench/graph.h"

namespace sb::test {

inline TensorId add_tensor(Graph& graph, const std::string& name, std::vector<int64_t> shape, TensorRole role,
                           TensorId gradient_of = kNoTensor, DType dtype = DType::kFloat32) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(shape);
  info.role = role;
  info.gradient_of = gradient_of;
  info.dtype = dtype;
  return graph.add_tensor(info);
}

// A chain of `layers` layers (weights of 256 floats, activations of 512; layer i's forward node is i), then the loss's
// backward (node `layers`), then per layer from the last its weight gradient (node layers + 1 + 2 (layers - 1 - i))
// and its input gradient, which reads the weight: the buckets finish one after another.
struct Chain {
  Graph graph;
  std::vector<TensorId> weights, gradients, activations;
  explicit Chain(int layers) {
    TensorId h = add_tensor(graph, "x", {512}, TensorRole::kInput);
    std::vector<TensorId> inputs;
    for (int i = 0; i < layers; ++i) {
      const std::string n = std::to_string(i);
      weights.push_back(add_tensor(graph, "w" + n, {256}, TensorRole::kParameter));
      gradients.push_back(add_tensor(graph, "dw" + n, {256}, TensorRole::kGradient, weights.back()));
      inputs.push_back(h);
      h = add_tensor(graph, "h" + n, {512}, TensorRole::kActivation);
      activations.push_back(h);
      graph.add_node(Node{"layer", {inputs.back(), weights.back()}, {h}, {}, false});
    }
    TensorId dh = add_tensor(graph, "dy", {512}, TensorRole::kActivation);
    activations.push_back(dh);
    graph.add_node(Node{"loss_backward", {h}, {dh}, {}, true});
    for (int i = layers - 1; i >= 0; --i) {
      const auto k = static_cast<size_t>(i);
      graph.add_node(Node{"weight_grad", {inputs[k], dh}, {gradients[k]}, {}, true});
      const TensorId next = add_tensor(graph, "dh" + std::to_string(i), {512}, TensorRole::kActivation);
      activations.push_back(next);
      graph.add_node(Node{"input_grad", {dh, weights[k]}, {next}, {}, true});
      dh = next;
    }
  }
};

}  // namespace sb::test
