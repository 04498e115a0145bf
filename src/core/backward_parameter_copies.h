// zero3's parameters at 1/N (--strategy zero3, PlanOptions::parameter_blocks): the backward pass reads parameters of
// its own. A rank holds its shard of the parameters between uses and gathers a unit's parameters into a block of the
// shared region before the unit's forward and again before its backward (FSDP's reshard_after_forward). Were the
// backward nodes to read the tensors the forward nodes read, each unit's block would live from its forward gather
// through the activation peak to its backward; with a copy of its own each block lives only around its readers.
#pragma once

#include <cstddef>

#include "scalebench/graph.h"

namespace sb {

// Rewrites the backward nodes (Node::backward) to read backward copies: for each parameter a backward node reads, an
// activation with TensorInfo::parameter_copy_of set (a view of a parameter: a view of that copy); for the output of a
// forward cast of a parameter (mixed precision's weight cast, read again by the backward GEMMs), a cast of the
// parameter's backward copy, inserted as a backward node just before the first backward node that reads it. The
// forward nodes are unchanged. Returns how many parameters got a backward copy. Call after append_backward (and any
// other pass), before planning; the plan must then place the copies (PlanOptions::parameter_blocks).
size_t give_backward_its_own_parameter_copies(Graph& graph);

// A cast that pass inserted: of a parameter's backward copy, run by the backward pass alone (the dp replica's nodes
// the solo replica does not have: run's dp_only_nodes, plan's dp_only_node_ms).
bool casts_a_backward_copy(const Graph& graph, const Node& node);

}  // namespace sb
