// Reverse-mode differentiation of a forward graph (ARCHITECTURE.md step 4). Walks the forward nodes in
// reverse, asks each op's backward rule (src/engine/backward_rules.cpp) for the gradients of its inputs,
// sums the contributions of tensors used more than once (tied embeddings, residual branches) and gives every
// parameter a kGradient tensor. A parameter's gradient is finalised the moment its last contribution is
// written, so the planner sees its true ready point and buckets can be reduced during the backward pass.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scalebench/graph.h"

namespace sb {

struct BackwardOptions {
  // Whether a tied table's gradient (a trained fp32 table read by embedding lookups and by something else) is split
  // into its dense part and its lookups' rows (src/core/ops/embedding_rows.h), asked once per such table with its
  // rows and the ids its lookups read. Empty: every one is split.
  std::function<bool(int64_t rows, int64_t ids)> split_tied_table;
};

// `loss` must be the one-element output of a loss op (softmax_cross_entropy, span_loss, or a sum of
// losses). Returns parameter -> gradient.
// Throws UsageError for an op without a backward rule, or a parameter the loss does not depend on unless it
// was declared unused (GraphBuilder::declare_unused_parameter: its gradient is zero-filled).
std::map<TensorId, TensorId> append_backward(Graph& graph, TensorId loss, const BackwardOptions& options = {});

// The gradient of sum(output) with respect to x (an input or activation that `output` depends on), built of
// FORWARD nodes: the backward rules' nodes are emitted with backward = false, seeded by a `fill` node of ones,
// so a loss that contains the result (StyleGAN's R1 penalty ||d sum D(x) / dx||^2) is differentiated again by
// append_backward. That second pass needs a rule for every backward op on the path (second-order rules, in each
// backward op's family, src/core/ops/<family>.cpp); an op without one is a UsageError there. Only tensors on a
// path from x to output get gradients here (no parameter gradients). Returns a tensor shaped like x.
// Throws UsageError when output does not depend on x or x is not floating-point.
TensorId append_input_gradient(Graph& graph, TensorId output, TensorId x);

// Activation recomputation, after append_backward: the outputs of forward nodes of these ops that the
// backward pass reads are not kept from the forward pass but computed again (the same node, marked backward)
// just before their first backward use, from inputs the backward pass keeps anyway. For GELU, whose backward
// reads its input, this frees the GELU output between the passes (BERT: one (tokens, 4·hidden) tensor per
// layer) for one extra elementwise pass. Throws UsageError for an op whose output could not be recomputed
// (anything but gelu).
void recompute_in_backward(Graph& graph, const std::vector<std::string>& ops);

}  // namespace sb
