// src/core/ops/op_helpers.h.
#include "src/core/ops/op_helpers.h"

#include <algorithm>
#include <utility>

namespace sb::ops {

TensorId workspace_tensor(Graph& graph, const std::string& name, int64_t bytes) {
  TensorInfo scratch;
  scratch.name = name;
  scratch.shape = {std::max<int64_t>(bytes, 1)};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  return graph.add_tensor(scratch);
}

TensorId workspace_like(detail::BackwardContext& ctx, TensorId forward_workspace, const std::string& suffix) {
  TensorInfo info = ctx.graph().tensor(forward_workspace);
  info.name += suffix;
  return ctx.graph().add_tensor(info);
}

TensorId view_node(Graph& graph, const std::string& op, TensorId x, const std::string& name) {
  TensorInfo info;
  info.name = name;
  info.shape = graph.tensor(x).shape;
  info.dtype = graph.tensor(x).dtype;
  info.view_of = x;
  const TensorId y = graph.add_tensor(info);
  graph.add_node(Node{op, {x}, {y}, {{"n", double(graph.tensor(x).elements())}}, false});
  return y;
}

}  // namespace sb::ops
