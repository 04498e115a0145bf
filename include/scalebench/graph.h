// The static training graph: tensors with fixed shapes and dtypes, and a list of nodes in execution order.
// Workloads build it through GraphBuilder calls (issue 3); autodiff appends the backward nodes; the memory
// planner (planner.h) gives every tensor an offset before anything is allocated. Nothing here touches a
// device: the same graph answers "how many bytes" without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scalebench/dtype.h"

namespace sb {

using TensorId = int32_t;
constexpr TensorId kNoTensor = -1;

// What a tensor is for decides where the planner puts it and how long it lives.
enum class TensorRole {
  kParameter,       // trained weights: live for the whole run, flat buffer
  kGradient,        // gradient of a parameter: flat buffer in backward order, reduced in buckets
  kOptimizerState,  // moments, master weights: flat buffer beside the parameters
  kInput,           // synthetic data and labels: written once per run, live for the whole step
  kActivation,      // forward and backward intermediates: arena, offsets by liveness
  kWorkspace,       // scratch of one node (GEMM, softmax statistics): arena, lives for that node only
  // Non-trained model state updated by forward nodes (BatchNorm's running mean and variance): a flat region
  // after the optimizer state, set to `initial_value` when an executor is built, never a gradient, never
  // reduced. Each data-parallel rank keeps its own, as PyTorch DDP's buffers between broadcasts.
  kState,
};
const char* tensor_role_name(TensorRole role);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  TensorRole role = TensorRole::kActivation;
  TensorId gradient_of = kNoTensor;  // for kGradient: the parameter it belongs to
  bool read_after_step = false;      // the host reads it after the step (the loss): live to the end
  // A kParameter this graph never reads (another task's head of a multi-task model): it stays in the model,
  // so the flat buffers, the optimizer and the all-reduce carry it, and autodiff gives it a zero-filled
  // gradient instead of refusing it. Set by GraphBuilder::declare_unused_parameter.
  bool unused_this_step = false;
  TensorId view_of = kNoTensor;      // a reshape: the same bytes as that tensor, placed with it, never copied
  // A kInput holding weights that are part of the model but never trained (pix2pixHD's VGG19, Mask R-CNN's
  // frozen stem and res2; GraphBuilder::frozen_parameter): counted by Graph::frozen_parameter_count, not by
  // parameter_count.
  bool frozen_weight = false;
  // A kParameter's network in a model with one optimizer per network (pix2pixHD's G and D): the planner's
  // gradient buckets never span two groups, so each network's gradients are reduced by buckets of their own.
  std::string parameter_group;
  float initial_value = 0.0f;        // kState (fp32): every element's value when the executor is built
  // zero3's parameters at 1/N (src/core/backward_parameter_copies.h): an activation holding this parameter again for
  // the backward pass, gathered into its unit's backward block (PlanOptions::parameter_blocks) so that the copy the
  // forward pass read can die after its last forward reader.
  TensorId parameter_copy_of = kNoTensor;

  int64_t elements() const;
  uint64_t bytes() const;
};

// Scalar attributes of a node (scale, epsilon, dropout probability, transpose flags...), by name.
using NodeAttributes = std::map<std::string, double>;

struct Node {
  std::string op;                  // kernel family name, the same on every device ("gemm", "layernorm"...)
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  NodeAttributes attributes;
  bool backward = false;           // appended by autodiff
};

// A stretch of nodes a sub-step runs before its training pass: nodes [begin, end), `repeat` times in a row. A
// decode loop is one part repeated once per generated token (its nodes read a step counter on the device); a
// switch of the training pass's inputs is a part of copies. Every tensor a repeated part touches lives, in the
// memory plan, from the part's first node to its last, so what one repetition writes the next still finds.
struct StepPart {
  std::string name;
  size_t begin = 0, end = 0;
  int64_t repeat = 1;
  bool generation = false;  // no-gradient generation: the "decode" category of step breakdowns and profiles
};

// One of the training step's sub-steps: its parts, then the training pass (the graph's nodes from
// training_begin() on: forward, backward), a gradient reduction and an optimizer step of its own. A graph
// without sub-steps has one implicit sub-step with no parts (every node is the training pass).
struct SubStep {
  std::string name;             // "ae_en", "bt_en_de_en"
  std::vector<StepPart> parts;  // run in this order; node ranges in increasing order
  double units = 0;             // units the sub-step is credited with (its target words)
};

class Graph {
 public:
  TensorId add_tensor(TensorInfo info);  // throws UsageError on a non-positive dimension
  void add_node(Node node);              // throws UsageError on an unknown tensor id
  // Replaces the node list (graph passes that reorder or insert nodes); the same checks as add_node.
  void set_nodes(std::vector<Node> nodes);

  const TensorInfo& tensor(TensorId id) const;
  TensorInfo& tensor(TensorId id);
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }

  std::vector<TensorId> tensors_with_role(TensorRole role) const;
  TensorId find_tensor(const std::string& name) const;  // throws UsageError when there is none
  int64_t parameter_count() const;  // elements of every kParameter tensor (the trained ones)
  int64_t frozen_parameter_count() const;  // elements of every frozen weight (inputs marked frozen_weight)

  // The step's sub-steps (SubStep); UsageError when a part's range is empty, out of order or out of the nodes
  // so far. Parts precede the training pass: training_begin() is the end of the last part (0 without any).
  void set_sub_steps(std::vector<SubStep> sub_steps);
  const std::vector<SubStep>& sub_steps() const { return sub_steps_; }
  size_t sub_step_count() const { return sub_steps_.empty() ? 1 : sub_steps_.size(); }
  size_t training_begin() const;

 private:
  std::vector<TensorInfo> tensors_;
  std::vector<Node> nodes_;
  std::vector<SubStep> sub_steps_;
};

// Where a node's time goes, for step-time breakdowns: "gemm" (dense layers, forward and backward),
// "attention" (batched score/context products and the masked softmax), "normalization" (LayerNorm), "loss",
// "casts" (precision casts), "convolution" (conv2d and transposed-conv passes; BatchNorm and instance norm count
// as normalization), or "elementwise"
// (bias, activations, dropout, residuals, layout, embeddings).
const char* op_category(const Node& node);

// Floating-point operations of the graph's matrix products (2 per multiply-add), forward nodes only or all:
// gemm nodes, and composite ops (the SAN blocks) by their `matmul_flops` attribute.
double matmul_flops(const Graph& graph, bool include_backward);
double node_matmul_flops(const Node& node);  // one node's share of matmul_flops
// The matrix-product FLOPs one training step runs: every sub-step's training pass (forward and backward) and its
// parts as often as they repeat (a decode loop once per token). matmul_flops(graph, true) without sub-steps.
double step_matmul_flops(const Graph& graph);

}  // namespace sb
