// GraphBuilder's StyleGAN helpers whose ops belong to other families (include/scalebench/graph_builder.h):
// constant (a fill) and upscale_conv2d (a conv2d_backward_data node). StyleGAN's own op families live in
// src/core/ops/<family>.cpp (blur, minibatch_stddev, gan_losses, fused_conv_weight, pixel_norm, noise_injection,
// style_modulation, style_mix, ema).
#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/cpu/conv2d.h"
#include "src/engine/conv2d_geometry.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

const std::vector<int64_t>& nhwc(const Graph& graph, TensorId x, const char* op) {
  const std::vector<int64_t>& xs = graph.tensor(x).shape;
  if (xs.size() != 4) throw UsageError(std::string(op) + ": input must be (N, H, W, C), got " + shape_text(xs));
  return xs;
}

}  // namespace

TensorId GraphBuilder::constant(std::vector<int64_t> dims, double value) {
  const TensorId out = activation(next_name("constant"), std::move(dims));
  graph_.add_node(Node{"fill", {}, {out}, {{"n", double(graph_.tensor(out).elements())}, {"value", value}}, false});
  return out;
}

TensorId GraphBuilder::upscale_conv2d(TensorId x, TensorId weight4x4) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc(graph_, x, "upscale_conv2d");
  const std::vector<int64_t> ws = shape(weight4x4);
  if (ws.size() != 4 || ws[1] != 4 || ws[2] != 4 || ws[0] != xs[3]) {
    throw UsageError("upscale_conv2d: weight " + shape_text(ws) + " must be (K, 4, 4, C) with K = the channels of " +
                     shape_text(xs));
  }
  // The stride-2 conv whose data gradient this is: input (N, 2H, 2W, C), output (N, H, W, K).
  Conv2dGeometry g;
  g.batch = xs[0], g.in_h = 2 * xs[1], g.in_w = 2 * xs[2], g.in_c = ws[3];
  g.out_h = xs[1], g.out_w = xs[2], g.out_c = ws[0];
  g.kernel_h = g.kernel_w = 4, g.stride_h = g.stride_w = 2;
  g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = 1;
  cpu::check_conv2d_geometry(g);
  const TensorId w = in_compute_dtype(weight4x4);
  const TensorId y = activation(next_name("upscale_conv"), {g.batch, g.in_h, g.in_w, g.in_c});
  // The conv runner's workspace, padded-channel copies included (a C > 8 not a multiple of 8 would need them).
  TensorInfo scratch;
  scratch.name = next_name("upscale_conv_workspace");
  scratch.shape = {int64_t(conv2d_workspace_bytes(g, dtype_size(compute_), conv_workspace_limit_))};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);
  Node node{"conv2d_backward_data", {x, w}, {y, workspace}, {}, false};
  store_conv2d_geometry(g, node.attributes);
  node.attributes["matmul_flops"] = 2 * g.macs();
  graph_.add_node(node);
  return y;
}

}  // namespace sb
