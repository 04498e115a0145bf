// GraphBuilder's GAN ops (include/scalebench/graph_builder.h), added for pix2pixHD and shared with StyleGAN:
// stopped and discarded gradients, frozen weights, instance normalisation, transposed convolution, reflection
// padding and the LSGAN / L1 losses. Shapes are checked and the sizes the kernels need stored as attributes.
#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/cpu/conv2d.h"
#include "src/engine/conv2d_geometry.h"
#include "src/engine/instance_norm_workspace.h"
#include "src/engine/pixel_loss_workspace.h"
#include "src/engine/shape_text.h"

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

TensorId workspace_tensor(Graph& graph, const std::string& name, int64_t bytes) {
  TensorInfo scratch;
  scratch.name = name;
  scratch.shape = {std::max<int64_t>(bytes, 1)};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  return graph.add_tensor(scratch);
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

TensorId GraphBuilder::instance_norm(TensorId x, double epsilon) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("instance_norm: input must be (N, H, W, C), got " + shape_text(xs));
  if (xs[1] * xs[2] < 2) {
    throw UsageError("instance_norm: needs more than one pixel per channel (PyTorch refuses it too), got " +
                     shape_text(xs));
  }
  if (!(epsilon > 0)) throw UsageError("instance_norm: epsilon must be > 0");
  const int64_t batch = xs[0], pixels = xs[1] * xs[2], channels = xs[3];
  const TensorId y = activation(next_name("instance_norm"), xs);
  const TensorId mean = activation(next_name("instance_norm_mean"), {batch, channels}, DType::kFloat32);
  const TensorId invstd = activation(next_name("instance_norm_invstd"), {batch, channels}, DType::kFloat32);
  const TensorId workspace = workspace_tensor(graph_, next_name("instance_norm_workspace"),
                                              instance_norm_workspace_bytes(batch, pixels, channels));
  graph_.add_node(Node{"instance_norm", {x}, {y, mean, invstd, workspace},
                       {{"batch", double(batch)}, {"pixels", double(pixels)}, {"channels", double(channels)},
                        {"epsilon", epsilon}},
                       false});
  return y;
}

TensorId GraphBuilder::mse_loss(TensorId x, double target) {
  x = in_compute_dtype(x);
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  const int64_t n = graph_.tensor(x).elements();
  const TensorId workspace = workspace_tensor(graph_, next_name("mse_loss_workspace"), pixel_loss_workspace_bytes(n));
  graph_.add_node(Node{"mse_loss", {x}, {loss, workspace}, {{"n", double(n)}, {"target", target}}, false});
  return loss;
}

TensorId GraphBuilder::l1_loss(TensorId a, TensorId b) {
  a = in_compute_dtype(a);
  b = in_compute_dtype(b);
  if (graph_.tensor(a).shape != graph_.tensor(b).shape) {
    throw UsageError("l1_loss: operands " + shape_text(graph_.tensor(a).shape) + " and " +
                     shape_text(graph_.tensor(b).shape) + " differ");
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  const int64_t n = graph_.tensor(a).elements();
  const TensorId workspace = workspace_tensor(graph_, next_name("l1_loss_workspace"), pixel_loss_workspace_bytes(n));
  graph_.add_node(Node{"l1_loss", {a, b}, {loss, workspace}, {{"n", double(n)}}, false});
  return loss;
}

}  // namespace sb
