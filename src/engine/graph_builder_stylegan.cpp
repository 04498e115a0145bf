// GraphBuilder's StyleGAN ops (include/scalebench/graph_builder.h): shape checks and the sizes the kernels
// read, stored as node attributes.
#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/minibatch_stddev.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/optimizer.h"
#include "src/core/ops/conv2d.h"
#include "src/core/ops/shape_text.h"

namespace sb {
namespace {

const std::vector<int64_t>& nhwc(const Graph& graph, TensorId x, const char* op) {
  const std::vector<int64_t>& xs = graph.tensor(x).shape;
  if (xs.size() != 4) throw UsageError(std::string(op) + ": input must be (N, H, W, C), got " + shape_text(xs));
  return xs;
}

NodeAttributes image_attributes(const std::vector<int64_t>& xs) {
  return {{"batch", double(xs[0])}, {"height", double(xs[1])}, {"width", double(xs[2])}, {"channels", double(xs[3])}};
}

}  // namespace

TensorId GraphBuilder::constant(std::vector<int64_t> dims, double value) {
  const TensorId out = activation(next_name("constant"), std::move(dims));
  graph_.add_node(Node{"fill", {}, {out}, {{"n", double(graph_.tensor(out).elements())}, {"value", value}}, false});
  return out;
}

TensorId GraphBuilder::blur2d(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc(graph_, x, "blur2d");
  const TensorId y = activation(next_name("blur"), xs);
  graph_.add_node(Node{"blur2d", {x}, {y}, image_attributes(xs), false});
  return y;
}

TensorId GraphBuilder::minibatch_stddev(TensorId x, int64_t group_size) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc(graph_, x, "minibatch_stddev");
  if (group_size < 1) throw UsageError("minibatch_stddev: the group size must be >= 1");
  if (xs[0] % batchnorm_groups_ != 0) {
    throw UsageError("minibatch_stddev: the batch of " + shape_text(xs) + " does not divide into " +
                     std::to_string(batchnorm_groups_) + " parts");
  }
  cpu::MinibatchStddevGeometry g;
  g.batch = xs[0], g.height = xs[1], g.width = xs[2], g.channels = xs[3];
  g.splits = batchnorm_groups_;
  // The reference's tf.minimum(group_size, batch); its reshape refuses a batch the group does not divide, where
  // this takes the largest group size that divides the part (the same work: `plan` and `maxbatch` try any batch).
  g.group = std::min(group_size, g.part());
  while (g.part() % g.group != 0) --g.group;
  cpu::check_minibatch_stddev_geometry(g);
  NodeAttributes attributes = image_attributes(xs);
  attributes["group"] = double(g.group);
  attributes["splits"] = double(g.splits);
  const TensorId y = activation(next_name("minibatch_stddev"), {xs[0], xs[1], xs[2], xs[3] + 1});
  graph_.add_node(Node{"minibatch_stddev", {x}, {y}, attributes, false});
  return y;
}

TensorId GraphBuilder::softplus_loss(TensorId scores, double sign) {
  scores = converted(scores, DType::kFloat32);
  const std::vector<int64_t> ss = shape(scores);
  if (sign != 1.0 && sign != -1.0) throw UsageError("softplus_loss: the sign must be 1 or -1");
  if (ss.empty() || graph_.tensor(scores).elements() != ss[0]) {
    throw UsageError("softplus_loss: one score per sample, got " + shape_text(ss));
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  graph_.add_node(Node{"softplus_loss", {scores}, {loss}, {{"n", double(ss[0])}, {"sign", sign}}, false});
  return loss;
}

TensorId GraphBuilder::squared_norm_loss(TensorId x, double scale) {
  x = converted(x, DType::kFloat32);
  if (!(scale > 0)) throw UsageError("squared_norm_loss: the scale must be > 0");
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  // The CUDA kernel's deterministic sum of squares: one double per block of a fixed grid, and the total.
  TensorInfo scratch;
  scratch.name = next_name("squared_norm_workspace");
  scratch.shape = {int64_t(sizeof(double)) * cpu::kGradNormScratchDoubles};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);
  graph_.add_node(Node{"squared_norm_loss", {x}, {loss, workspace},
                       {{"n", double(graph_.tensor(x).elements())}, {"batch", double(shape(x)[0])}, {"scale", scale}},
                       false});
  return loss;
}

TensorId GraphBuilder::fused_conv_weight(TensorId weight3x3, bool downsample) {
  const std::vector<int64_t> ws = shape(weight3x3);
  if (ws.size() != 4 || ws[1] != 3 || ws[2] != 3) {
    throw UsageError("fused_conv_weight: the weight must be (K, 3, 3, C), got " + shape_text(ws));
  }
  const TensorId w4 = activation(next_name("fused_weight"), {ws[0], 4, 4, ws[3]}, graph_.tensor(weight3x3).dtype);
  graph_.add_node(Node{"fused_conv_weight", {weight3x3}, {w4},
                       {{"out_channels", double(ws[0])}, {"in_channels", double(ws[3])},
                        {"factor", downsample ? 0.25 : 1.0}},
                       false});
  return w4;
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

namespace sb {

TensorId GraphBuilder::pixel_norm(TensorId x) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() < 2) throw UsageError("pixel_norm: input must be (rows, C), got " + shape_text(xs));
  const TensorId y = activation(next_name("pixel_norm"), xs);
  graph_.add_node(Node{"pixel_norm", {x}, {y},
                       {{"rows", double(graph_.tensor(x).elements() / xs.back())}, {"cols", double(xs.back())}},
                       false});
  return y;
}

TensorId GraphBuilder::noise_injection(TensorId x, TensorId weight, TensorId sample_ids) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = nhwc(graph_, x, "noise_injection");
  if (shape(weight) != std::vector<int64_t>{xs[3]} || graph_.tensor(weight).dtype != DType::kFloat32) {
    throw UsageError("noise_injection: the weight must be fp32 (C) = (" + std::to_string(xs[3]) + ")");
  }
  if (shape(sample_ids) != std::vector<int64_t>{xs[0]} || graph_.tensor(sample_ids).dtype != DType::kInt32) {
    throw UsageError("noise_injection: sample ids must be int32 (N) = (" + std::to_string(xs[0]) + ")");
  }
  const int64_t pixels = xs[1] * xs[2];
  const TensorId y = activation(next_name("noise"), xs);
  // "n": the uniforms one sample draws (four per Philox block), so the executor sizes the step's range by it.
  graph_.add_node(Node{"noise_injection", {x, weight, sample_ids}, {y},
                       {{"batch", double(xs[0])}, {"pixels", double(pixels)}, {"channels", double(xs[3])},
                        {"n", double(4 * cpu::noise_blocks(pixels))}, {"block_offset", double(dropout_blocks_)}},
                       false});
  dropout_blocks_ += cpu::noise_blocks(pixels);
  return y;
}

TensorId GraphBuilder::style_modulation(TensorId x, TensorId style) {
  x = in_compute_dtype(x);
  style = in_compute_dtype(style);
  const std::vector<int64_t> xs = nhwc(graph_, x, "style_modulation");
  if (shape(style) != std::vector<int64_t>{xs[0], 2 * xs[3]}) {
    throw UsageError("style_modulation: style " + shape_text(shape(style)) + " must be (N, 2C) for " + shape_text(xs));
  }
  const TensorId y = activation(next_name("style_mod"), xs);
  graph_.add_node(Node{"style_modulation", {x, style}, {y},
                       {{"batch", double(xs[0])}, {"pixels", double(xs[1] * xs[2])}, {"channels", double(xs[3])}},
                       false});
  return y;
}

std::vector<TensorId> GraphBuilder::style_mix(TensorId w, TensorId crossover, int64_t num_layers) {
  w = in_compute_dtype(w);
  const std::vector<int64_t> ws = shape(w);
  if (ws.size() != 2 || ws[0] % 2 != 0 || num_layers < 1 || num_layers > 32) {
    throw UsageError("style_mix: w must be (2N, D) and 1 to 32 layers, got " + shape_text(ws));
  }
  const int64_t batch = ws[0] / 2;
  if (shape(crossover) != std::vector<int64_t>{batch} || graph_.tensor(crossover).dtype != DType::kInt32) {
    throw UsageError("style_mix: crossover must be int32 (N) = (" + std::to_string(batch) + ")");
  }
  Node node{"style_mix", {w, crossover}, {},
            {{"layers", double(num_layers)}, {"batch", double(batch)}, {"dim", double(ws[1])}}, false};
  for (int64_t l = 0; l < num_layers; ++l) node.outputs.push_back(activation(next_name("dlatent"), {batch, ws[1]}));
  graph_.add_node(node);
  return node.outputs;
}

TensorId GraphBuilder::moving_average(TensorId parameter, double beta) {
  const TensorInfo& info = graph_.tensor(parameter);
  if (info.role != TensorRole::kParameter || info.dtype != DType::kFloat32) {
    throw UsageError("moving_average: '" + info.name + "' is not an fp32 parameter");
  }
  if (!(beta >= 0 && beta < 1)) throw UsageError("moving_average: beta must be in [0, 1)");
  TensorInfo state;
  state.name = info.name + ".ema";
  state.shape = info.shape;
  state.role = TensorRole::kState;
  state.frozen_weight = true;  // model weights that are not trained: `list` counts them as frozen
  const TensorId average = graph_.add_tensor(state);
  graph_.add_node(Node{"ema_update", {parameter, average}, {},
                       {{"n", double(graph_.tensor(parameter).elements())}, {"beta", beta}}, false});
  return average;
}

}  // namespace sb
