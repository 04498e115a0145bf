// Graph bookkeeping (include/scalebench/graph.h).
#include "scalebench/graph.h"

#include <algorithm>

#include "scalebench/error.h"

namespace sb {

const char* tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kParameter: return "parameters";
    case TensorRole::kGradient: return "gradients";
    case TensorRole::kOptimizerState: return "optimizer_state";
    case TensorRole::kInput: return "inputs";
    case TensorRole::kActivation: return "activations";
    case TensorRole::kWorkspace: return "workspace";
    case TensorRole::kState: return "state";
  }
  return "unknown";
}

int64_t TensorInfo::elements() const {
  int64_t count = 1;
  for (int64_t dimension : shape) count *= dimension;
  return count;
}

uint64_t TensorInfo::bytes() const { return static_cast<uint64_t>(elements()) * dtype_size(dtype); }

TensorId Graph::add_tensor(TensorInfo info) {
  for (int64_t dimension : info.shape) {
    if (dimension <= 0) {
      throw UsageError("tensor '" + info.name + "' has a non-positive dimension " + std::to_string(dimension));
    }
  }
  tensors_.push_back(std::move(info));
  return static_cast<TensorId>(tensors_.size() - 1);
}

void Graph::add_node(Node node) {
  for (const auto* list : {&node.inputs, &node.outputs}) {
    for (TensorId id : *list) {
      if (id < 0 || static_cast<size_t>(id) >= tensors_.size()) {
        throw UsageError("node '" + node.op + "' names unknown tensor " + std::to_string(id));
      }
    }
  }
  nodes_.push_back(std::move(node));
}

void Graph::set_nodes(std::vector<Node> nodes) {
  nodes_.clear();
  for (Node& node : nodes) add_node(std::move(node));
}

const TensorInfo& Graph::tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
TensorInfo& Graph::tensor(TensorId id) { return tensors_.at(static_cast<size_t>(id)); }

std::vector<TensorId> Graph::tensors_with_role(TensorRole role) const {
  std::vector<TensorId> ids;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].role == role) ids.push_back(static_cast<TensorId>(i));
  }
  return ids;
}

TensorId Graph::find_tensor(const std::string& name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<TensorId>(i);
  }
  throw UsageError("the graph has no tensor named '" + name + "'");
}

int64_t Graph::parameter_count() const {
  int64_t count = 0;
  for (const TensorInfo& info : tensors_) {
    if (info.role == TensorRole::kParameter) count += info.elements();
  }
  return count;
}

int64_t Graph::frozen_parameter_count() const {
  int64_t count = 0;
  for (const TensorInfo& info : tensors_) {
    // Frozen inputs (pix2pixHD's VGG19, Mask R-CNN's stem) and kState copies of trained weights that the graph
    // updates itself (StyleGAN's EMA generator, GraphBuilder::moving_average): model weights, never trained.
    const bool copy = info.role == TensorRole::kInput || info.role == TensorRole::kState;
    if (copy && info.frozen_weight) count += info.elements();
  }
  return count;
}

void Graph::set_sub_steps(std::vector<SubStep> sub_steps) {
  for (const SubStep& sub_step : sub_steps) {
    size_t after = 0;
    for (const StepPart& part : sub_step.parts) {
      if (part.begin >= part.end || part.end > nodes_.size() || part.begin < after || part.repeat < 1) {
        throw UsageError("sub-step '" + sub_step.name + "': part '" + part.name + "' is not a range of nodes after "
                         "the previous part, repeated at least once");
      }
      after = part.end;
    }
  }
  sub_steps_ = std::move(sub_steps);
}

size_t Graph::training_begin() const {
  size_t begin = 0;
  for (const SubStep& sub_step : sub_steps_) {
    for (const StepPart& part : sub_step.parts) begin = std::max(begin, part.end);
  }
  return begin;
}

double node_matmul_flops(const Node& node) {
  const NodeAttributes& a = node.attributes;
  if (node.op == "gemm") return 2.0 * a.at("m") * a.at("n") * a.at("k") * a.at("batch");
  if (a.count("matmul_flops") != 0) return a.at("matmul_flops");  // composite ops (SAN's GRU cell, attentions)
  return 0;
}

double matmul_flops(const Graph& graph, bool include_backward) {
  double flops = 0;
  for (const Node& node : graph.nodes()) {
    if (node.backward && !include_backward) continue;
    flops += node_matmul_flops(node);
  }
  return flops;
}

double step_matmul_flops(const Graph& graph) {
  double flops = 0;
  for (size_t n = graph.training_begin(); n < graph.nodes().size(); ++n) flops += node_matmul_flops(graph.nodes()[n]);
  flops *= static_cast<double>(graph.sub_step_count());
  for (const SubStep& sub_step : graph.sub_steps()) {
    for (const StepPart& part : sub_step.parts) {
      for (size_t n = part.begin; n < part.end; ++n) {
        flops += static_cast<double>(part.repeat) * node_matmul_flops(graph.nodes()[n]);
      }
    }
  }
  return flops;
}

const char* op_category(const Node& node) {
  const std::string& op = node.op;
  if (op == "gemm") return node.attributes.at("batch") > 1 ? "attention" : "gemm";
  if (op.rfind("masked_softmax", 0) == 0) return "attention";
  if (op.rfind("layernorm", 0) == 0 || op.rfind("batchnorm", 0) == 0 || op.rfind("instance_norm", 0) == 0) {
    return "normalization";
  }
  if (op.rfind("conv2d", 0) == 0 || op == "conv_transpose2d") return "convolution";
  if (op.find("cross_entropy") != std::string::npos || op.find("loss") != std::string::npos) return "loss";
  if (op == "cast") return "casts";
  return "elementwise";
}

}  // namespace sb
