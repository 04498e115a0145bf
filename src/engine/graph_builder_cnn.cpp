// GraphBuilder's convolutional-network ops other than conv2d and pooling (include/scalebench/graph_builder.h):
// BatchNorm with its running statistics, statistics groups and workspace, LeakyReLU, sigmoid, resizing, concatenation and split,
// drop-path and the YOLOv3 loss; the pass that makes BatchNorm's fused activations linear.
#include <algorithm>
#include <utility>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/engine/batchnorm_workspace.h"
#include "src/core/ops/shape_text.h"
#include "src/engine/yolo_workspace.h"

namespace sb {
TensorId GraphBuilder::leaky_relu(TensorId x, double slope) {
  if (!(slope > 0)) throw UsageError("leaky_relu: the slope must be > 0 (the backward pass reads the sign off y)");
  x = in_compute_dtype(x);
  TensorId out = activation(next_name("leaky_relu"), graph_.tensor(x).shape);
  graph_.add_node(
      Node{"leaky_relu", {x}, {out}, {{"n", double(graph_.tensor(x).elements())}, {"slope", slope}}, false});
  return out;
}

TensorId GraphBuilder::sigmoid(TensorId x) { return elementwise("sigmoid", x); }

void GraphBuilder::set_batchnorm_groups(int64_t groups) {
  if (groups < 1) throw UsageError("batchnorm groups must be >= 1, got " + std::to_string(groups));
  batchnorm_groups_ = groups;
}

TensorId GraphBuilder::batchnorm(TensorId x, TensorId gamma, TensorId beta, const BatchNormOptions& options) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  const int64_t channels = xs.back();
  const int64_t rows = graph_.tensor(x).elements() / channels;
  const int64_t groups = batchnorm_groups_;
  const std::vector<int64_t> feature{channels};
  if (graph_.tensor(gamma).shape != feature || graph_.tensor(beta).shape != feature) {
    throw UsageError("batchnorm: gamma and beta must be (channels) = (" + std::to_string(channels) + ")");
  }
  if (graph_.tensor(gamma).dtype != DType::kFloat32 || graph_.tensor(beta).dtype != DType::kFloat32) {
    throw UsageError("batchnorm: gamma and beta must be fp32");
  }
  if (rows < 2) throw UsageError("batchnorm: training needs more than one value per channel");
  // Whole samples per group: the rows of one sample are contiguous (batch-major), so rows / groups splits the
  // batch exactly when the batch (first dimension) does.
  if (xs[0] % groups != 0) {
    throw UsageError("batchnorm: the batch of x " + shape_text(xs) + " does not divide into " + std::to_string(groups) +
                     " statistics groups");
  }
  if (rows / groups < 2) {
    throw UsageError("batchnorm: each of the " + std::to_string(groups) +
                     " statistics groups needs more than one value per channel, x is " + shape_text(xs));
  }
  if (!(options.epsilon > 0) || options.momentum < 0 || options.momentum > 1) {
    throw UsageError("batchnorm: epsilon must be > 0 and momentum in [0, 1]");
  }
  if (options.activation == BatchNormOptions::Activation::kLeakyRelu && !(options.slope > 0)) {
    throw UsageError("batchnorm: the LeakyReLU slope must be > 0");
  }
  auto state = [&](const char* suffix, float initial) {
    TensorInfo info;
    info.name = graph_.tensor(gamma).name + suffix;
    info.shape = feature;
    info.role = TensorRole::kState;
    info.initial_value = initial;
    return graph_.add_tensor(info);
  };
  const TensorId running_mean = state(".running_mean", 0.0f), running_var = state(".running_var", 1.0f);
  const TensorId y = activation(next_name("batchnorm"), xs);
  const TensorId mean = activation(next_name("batchnorm_mean"), {groups, channels}, DType::kFloat32);
  const TensorId invstd = activation(next_name("batchnorm_invstd"), {groups, channels}, DType::kFloat32);
  TensorInfo scratch;
  scratch.name = next_name("batchnorm_workspace");
  scratch.shape = {batchnorm_workspace_bytes(rows, channels, groups)};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);
  graph_.add_node(Node{"batchnorm", {x, gamma, beta, running_mean, running_var}, {y, mean, invstd, workspace},
                       {{"rows", double(rows)},
                        {"channels", double(channels)},
                        {"groups", double(groups)},
                        {"epsilon", options.epsilon},
                        {"momentum", options.momentum},
                        {"activation", double(static_cast<int>(options.activation))},
                        {"slope", options.slope}},
                       false});
  return y;
}

int make_batchnorm_activations_linear(Graph& graph) {
  std::vector<Node> nodes = graph.nodes();
  int changed = 0;
  for (Node& node : nodes) {
    if (node.op != "batchnorm" || node.backward || node.attributes.at("activation") == 0) continue;
    node.attributes["activation"] = static_cast<double>(BatchNormOptions::Activation::kLeakyRelu);
    node.attributes["slope"] = 1.0;
    ++changed;
  }
  graph.set_nodes(std::move(nodes));
  return changed;
}

TensorId GraphBuilder::drop_path(TensorId x, double probability) {
  if (probability < 0 || probability >= 1) throw UsageError("drop_path probability must be in [0, 1)");
  if (probability == 0 || !dropout_enabled_) return x;
  x = in_compute_dtype(x);
  const int64_t batch = graph_.tensor(x).shape.at(0);
  const TensorId out = activation(next_name("drop_path"), graph_.tensor(x).shape);
  // "n" is the number of random draws (one per sample): the executor sizes the step's Philox range by it.
  graph_.add_node(Node{"drop_path", {x}, {out},
                       {{"n", double(batch)},
                        {"per_sample", double(graph_.tensor(x).elements() / batch)},
                        {"p", probability},
                        {"block_offset", double(dropout_blocks_)}},
                       false});
  dropout_blocks_ += (batch + 3) / 4;
  return out;
}

TensorId GraphBuilder::yolo_loss(TensorId head0, TensorId head1, TensorId head2, TensorId truth, int64_t classes) {
  const TensorId heads[3] = {in_compute_dtype(head0), in_compute_dtype(head1), in_compute_dtype(head2)};
  const std::vector<int64_t> ts = graph_.tensor(truth).shape;
  if (classes < 1) throw UsageError("yolo_loss: classes must be >= 1");
  if (ts.size() != 3 || ts[2] != 5 || graph_.tensor(truth).dtype != DType::kFloat32) {
    throw UsageError("yolo_loss: ground truth must be fp32 (N, boxes, 5), got " + shape_text(ts));
  }
  int64_t grid[3];
  for (int s = 0; s < 3; ++s) {
    const std::vector<int64_t>& hs = graph_.tensor(heads[s]).shape;
    if (hs.size() != 4 || hs[0] != ts[0] || hs[1] != hs[2] || hs[3] != 3 * (5 + classes)) {
      throw UsageError("yolo_loss: head " + std::to_string(s) + " must be (N, G, G, 3 (5 + classes)) = (" +
                       std::to_string(ts[0]) + ", G, G, " + std::to_string(3 * (5 + classes)) + "), got " + shape_text(hs));
    }
    grid[s] = hs[1];
  }
  const TensorId loss = activation(next_name("loss"), {1}, DType::kFloat32);
  graph_.tensor(loss).read_after_step = true;
  TensorInfo scratch;
  scratch.name = next_name("yolo_workspace");
  scratch.shape = {yolo_workspace_bytes(ts[0], grid)};
  scratch.dtype = DType::kUInt8;
  scratch.role = TensorRole::kWorkspace;
  const TensorId workspace = graph_.add_tensor(scratch);
  graph_.add_node(Node{"yolo_loss", {heads[0], heads[1], heads[2], truth}, {loss, workspace},
                       {{"batch", double(ts[0])}, {"boxes", double(ts[1])}, {"classes", double(classes)},
                        {"g0", double(grid[0])}, {"g1", double(grid[1])}, {"g2", double(grid[2])}},
                       false});
  return loss;
}

TensorId GraphBuilder::upsample_nearest(TensorId x, int64_t out_h, int64_t out_w) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4 || out_h < 1 || out_w < 1) {
    throw UsageError("upsample_nearest: input must be (N, H, W, C) and the output size positive, got " + shape_text(xs));
  }
  const TensorId y = activation(next_name("upsample_nearest"), {xs[0], out_h, out_w, xs[3]});
  graph_.add_node(Node{"upsample_nearest", {x}, {y},
                       {{"batch", double(xs[0])}, {"in_h", double(xs[1])}, {"in_w", double(xs[2])},
                        {"channels", double(xs[3])}, {"out_h", double(out_h)}, {"out_w", double(out_w)}},
                       false});
  return y;
}

TensorId GraphBuilder::upsample_bilinear(TensorId x, int64_t out_h, int64_t out_w, bool align_corners) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (xs.size() != 4 || out_h < 1 || out_w < 1) {
    throw UsageError("upsample_bilinear: input must be (N, H, W, C) and the output size positive, got " + shape_text(xs));
  }
  const TensorId y = activation(next_name("upsample_bilinear"), {xs[0], out_h, out_w, xs[3]});
  graph_.add_node(Node{"upsample_bilinear", {x}, {y},
                       {{"batch", double(xs[0])}, {"in_h", double(xs[1])}, {"in_w", double(xs[2])},
                        {"channels", double(xs[3])}, {"out_h", double(out_h)}, {"out_w", double(out_w)},
                        {"align_corners", align_corners ? 1.0 : 0.0}},
                       false});
  return y;
}

TensorId GraphBuilder::concat(const std::vector<TensorId>& given) {
  if (given.empty() || given.size() > 16) throw UsageError("concat: 1 to 16 parts");
  std::vector<TensorId> parts;
  for (TensorId part : given) parts.push_back(in_compute_dtype(part));
  std::vector<int64_t> shape = graph_.tensor(parts[0]).shape;
  NodeAttributes attributes{{"parts", double(parts.size())}};
  int64_t width = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const std::vector<int64_t>& ps = graph_.tensor(parts[k]).shape;
    if (ps.size() != shape.size() || !std::equal(ps.begin(), ps.end() - 1, shape.begin())) {
      throw UsageError("concat: part " + shape_text(ps) + " does not match " + shape_text(shape) + " outside the last dimension");
    }
    attributes["w" + std::to_string(k)] = double(ps.back());
    width += ps.back();
  }
  attributes["rows"] = double(graph_.tensor(parts[0]).elements() / shape.back());
  shape.back() = width;
  const TensorId y = activation(next_name("concat"), shape);
  graph_.add_node(Node{"concat", parts, {y}, attributes, false});
  return y;
}

std::vector<TensorId> GraphBuilder::split(TensorId x, const std::vector<int64_t>& widths) {
  x = in_compute_dtype(x);
  const std::vector<int64_t> xs = graph_.tensor(x).shape;
  if (widths.empty() || widths.size() > 16) throw UsageError("split: 1 to 16 parts");
  int64_t total = 0;
  NodeAttributes attributes{{"parts", double(widths.size())},
                            {"rows", double(graph_.tensor(x).elements() / xs.back())}};
  std::vector<TensorId> parts;
  for (size_t k = 0; k < widths.size(); ++k) {
    if (widths[k] < 1) throw UsageError("split: widths must be positive");
    total += widths[k];
    attributes["w" + std::to_string(k)] = double(widths[k]);
    std::vector<int64_t> shape = xs;
    shape.back() = widths[k];
    parts.push_back(activation(next_name("split"), shape));
  }
  if (total != xs.back()) {
    throw UsageError("split: widths sum to " + std::to_string(total) + ", the last dimension of " + shape_text(xs) + " is " +
                     std::to_string(xs.back()));
  }
  graph_.add_node(Node{"split", {x}, parts, attributes, false});
  return parts;
}

}  // namespace sb
