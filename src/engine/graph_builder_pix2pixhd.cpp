// GraphBuilder's GAN ops (include/scalebench/graph_builder.h), added for pix2pixHD and shared with StyleGAN:
// frozen weights, transposed convolution, reflection padding and the LSGAN / L1 losses. Shapes are checked and
// the sizes the kernels need stored as attributes.
#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/cpu/conv2d.h"
#include "src/core/ops/conv2d.h"
#include "src/engine/pixel_loss_workspace.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

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

TensorId GraphBuilder::conv_transpose2d(TensorId x, TensorId weight, TensorId bias, const Conv2dOptions& options,
                                        int64_t output_padding) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const std::vector<int64_t> ws = graph_.tensor(weight).shape;
  if (xs.size() != 4) throw UsageError("conv_transpose2d: input must be (N, H, W, C_in), got " + shape_text(xs));
  if (ws.size() != 4 || ws[0] != xs[3]) {
    throw UsageError("conv_transpose2d: weight must be (C_in, R, S, C_out) with C_in = " + std::to_string(xs[3]) +
                     ", got " + shape_text(ws));
  }
  if (options.same || options.groups != 1 || options.dilation_h != 1 || options.dilation_w != 1) {
    throw UsageError("conv_transpose2d: explicit padding, no groups, no dilation");
  }
  if (options.pad_top != options.pad_bottom || options.pad_left != options.pad_right) {
    throw UsageError("conv_transpose2d: padding must be symmetric (torch.nn.ConvTranspose2d's)");
  }
  if (output_padding < 0 || output_padding >= options.stride_h || output_padding >= options.stride_w) {
    throw UsageError("conv_transpose2d: output_padding " + std::to_string(output_padding) +
                     " must be >= 0 and smaller than the stride");
  }
  if (bias != kNoTensor && graph_.tensor(bias).shape != std::vector<int64_t>{ws[3]}) {
    throw UsageError("conv_transpose2d: bias must be (C_out) = (" + std::to_string(ws[3]) + ")");
  }
  // The geometry of the conv y -> x whose backward-data pass this is: its input is our output.
  Conv2dGeometry g;
  g.batch = xs[0], g.out_h = xs[1], g.out_w = xs[2], g.out_c = xs[3];
  g.kernel_h = ws[1], g.kernel_w = ws[2], g.in_c = ws[3];
  g.stride_h = options.stride_h, g.stride_w = options.stride_w;
  g.pad_top = g.pad_bottom = options.pad_top;
  g.pad_left = g.pad_right = options.pad_left;
  g.in_h = (g.out_h - 1) * g.stride_h - 2 * g.pad_top + g.kernel_h + output_padding;
  g.in_w = (g.out_w - 1) * g.stride_w - 2 * g.pad_left + g.kernel_w + output_padding;
  if (g.in_h < 1 || g.in_w < 1 || options.pad_top < 0 || options.pad_left < 0) {
    throw UsageError("conv_transpose2d: the padding leaves no output for input " + shape_text(xs));
  }
  cpu::check_conv2d_geometry(g);  // also: the conv maps the output extent back to the input's

  const TensorId w = in_compute_dtype(weight);
  const TensorId y = activation(next_name("conv_transpose2d"), {g.batch, g.in_h, g.in_w, g.in_c});
  // The padding is symmetric, so the front copies are those of padded channels (conv2d_cudnn_in_channels).
  const TensorId workspace =
      workspace_tensor(graph_, next_name("conv_transpose2d_workspace"),
                       int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_)));
  Node node{"conv_transpose2d", {x, w}, {y, workspace}, {{"output_padding", double(output_padding)}}, false};
  if (bias != kNoTensor) node.inputs.push_back(converted(bias, DType::kFloat32));
  store_conv2d_geometry(g, node.attributes);
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

TensorId GraphBuilder::reflection_pad2d(TensorId x, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4) throw UsageError("reflection_pad2d: input must be (N, H, W, C), got " + shape_text(xs));
  if (std::min({top, bottom, left, right}) < 0 || std::max(top, bottom) >= xs[1] || std::max(left, right) >= xs[2]) {
    throw UsageError("reflection_pad2d: pads must be >= 0 and smaller than the extent they mirror, input " +
                     shape_text(xs));
  }
  const TensorId y = activation(next_name("reflection_pad"), {xs[0], xs[1] + top + bottom, xs[2] + left + right, xs[3]});
  graph_.add_node(Node{"reflection_pad2d", {x}, {y},
                       {{"batch", double(xs[0])}, {"in_h", double(xs[1])}, {"in_w", double(xs[2])},
                        {"channels", double(xs[3])}, {"top", double(top)}, {"bottom", double(bottom)},
                        {"left", double(left)}, {"right", double(right)}},
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
