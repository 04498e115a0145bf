// GraphBuilder's GAN helpers (include/scalebench/graph_builder.h), added for pix2pixHD and shared with StyleGAN:
// stopped and discarded gradients and frozen weights. The GAN op families live in src/core/ops/<family>.cpp
// (transposed convolution, reflection padding, the pixel losses, instance normalisation).
#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"

namespace sb {
namespace {

// An output of `op` that shares x's storage (a view: the planner places it with x, no kernel runs).
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

}  // namespace

TensorId GraphBuilder::frozen_parameter(const std::string& name, std::vector<int64_t> dims) {
  const TensorId id = input(name, std::move(dims), DType::kFloat32);
  graph_.tensor(id).frozen_weight = true;
  return id;
}

TensorId GraphBuilder::stop_gradient(TensorId x) {
  if (!gradient_scaling_enabled_) return x;
  return view_node(graph_, "stop_gradient", x, next_name(graph_.tensor(x).name + ".stop_gradient"));
}

TensorId GraphBuilder::discard_gradient(TensorId x) {
  if (!gradient_scaling_enabled_) return x;
  return view_node(graph_, "discard_gradient", x, next_name(graph_.tensor(x).name + ".discard_gradient"));
}

}  // namespace sb
