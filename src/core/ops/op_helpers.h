// Small pieces the op families' core files share (src/core/ops/<family>.cpp): scratch tensors, views and
// attribute reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/graph.h"
#include "src/core/ops/backward_rule.h"

namespace sb::ops {

// A kWorkspace tensor of `bytes` (at least one) for one node's scratch.
TensorId workspace_tensor(Graph& graph, const std::string& name, int64_t bytes);
// A fresh workspace shaped like a forward node's, for its backward node.
TensorId workspace_like(detail::BackwardContext& ctx, TensorId forward_workspace, const std::string& suffix);
// An output of `op` that shares x's storage (a view: the planner places it with x, no kernel runs).
TensorId view_node(Graph& graph, const std::string& op, TensorId x, const std::string& name);

inline double attribute(const Node& node, const char* name) { return node.attributes.at(name); }
// An integer size attribute (sizes are stored as doubles, exact up to 2^53).
inline int64_t size_attribute(const Node& node, const char* name) {
  return static_cast<int64_t>(node.attributes.at(name));
}

// The product of dims[begin, end): the rows of a tensor viewed as (rows, last dimension).
inline int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t value = 1;
  for (size_t i = begin; i < end; ++i) value *= dims[i];
  return value;
}

}  // namespace sb::ops
