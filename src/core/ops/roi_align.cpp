// The RoIAlign family (src/core/ops/roi_align.h): GraphBuilder::roi_align, its backward rule and its ops' rows.
// Kernels: src/cpu/roi_align.cpp, src/cuda/roi_align.cu.
#include "src/core/ops/roi_align.h"

#include <cmath>
#include <string>
#include <utility>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_checks.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

NodeAttributes encode(const RoiAlignGeometry& g) {
  NodeAttributes a{{"batch", double(g.batch)},       {"channels", double(g.channels)},
                   {"rois", double(g.rois)},         {"output_size", double(g.output_size)},
                   {"sampling_ratio", double(g.sampling_ratio)}, {"levels", double(g.levels)},
                   {"first_level", double(g.first_level)},       {"aligned", g.aligned ? 1.0 : 0.0}};
  for (int l = 0; l < g.levels; ++l) {
    a["h" + std::to_string(l)] = double(g.height[l]);
    a["w" + std::to_string(l)] = double(g.width[l]);
  }
  return a;
}

TensorId GraphBuilder::roi_align(const std::vector<TensorId>& levels, TensorId rois, int64_t output_size,
                                 int64_t image_height, int64_t sampling_ratio, bool aligned) {
  if (levels.empty() || levels.size() > 4) throw UsageError("roi_align: 1 to 4 feature levels");
  if (output_size < 1 || sampling_ratio < 1 || image_height < 1) {
    throw UsageError("roi_align: output size, sampling ratio and image height must be >= 1");
  }
  const TensorInfo& ri = graph_.tensor(rois);
  ops::require_dtype(ri, DType::kFloat32, "roi_align");
  if (ri.shape.size() != 2 || ri.shape[1] != 5) throw UsageError("roi_align: rois must be (R, 5), got " + shape_text(ri.shape));
  Node node{"roi_align", {}, {}, {}, false};
  RoiAlignGeometry g;
  for (size_t l = 0; l < levels.size(); ++l) {
    const TensorId level = in_compute_dtype(levels[l]);
    const std::vector<int64_t> ls = shape(level);
    if (ls.size() != 4 || (l > 0 && (ls[0] != g.batch || ls[3] != g.channels))) {
      throw UsageError("roi_align: levels must be (N, H, W, C) alike in N and C, got " + shape_text(ls));
    }
    g.batch = ls[0], g.channels = ls[3];
    // torchvision's MultiScaleRoIAlign: scale = 2^round(log2(H / image height)).
    const int k = static_cast<int>(std::lround(std::log2(double(image_height) / double(ls[1]))));
    if (l == 0) g.first_level = k;
    if (k != g.first_level + static_cast<int>(l)) {
      throw UsageError("roi_align: level " + std::to_string(l) + " (" + shape_text(ls) + ") is not at stride 2^" +
                       std::to_string(g.first_level + l) + " of a " + std::to_string(image_height) + "-pixel image");
    }
    node.inputs.push_back(level);
    g.height[l] = ls[1], g.width[l] = ls[2];
  }
  node.inputs.push_back(rois);
  g.rois = ri.shape[0], g.output_size = output_size, g.sampling_ratio = static_cast<int>(sampling_ratio);
  g.levels = static_cast<int>(levels.size()), g.aligned = aligned;
  node.outputs.push_back(activation(next_name("roi_align"), {g.rois, output_size, output_size, g.channels}));
  node.attributes = encode(g);
  graph_.add_node(node);
  return node.outputs[0];
}

namespace {

// One node scatters dy into every level's gradient, accumulated in fp32 (atomics on the device: bf16 sums of
// many overlapping RoIs would lose most of their bits); a bf16 or fp16 graph casts each level's gradient once.
std::vector<detail::Contribution> roi_align_backward(detail::BackwardContext& ctx, const Node& node,
                                                     const std::vector<TensorId>& dout) {
  const size_t levels = node.inputs.size() - 1;
  const TensorId rois = node.inputs.back();
  Node backward{"roi_align_backward", {dout[0], rois}, {}, node.attributes, true};
  std::vector<detail::Contribution> result(node.inputs.size());
  std::vector<std::pair<size_t, TensorId>> casts;
  for (size_t l = 0; l < levels; ++l) {
    const TensorId level = node.inputs[l];
    TensorId d = ctx.gradient_like(level, "_f32");
    ctx.graph().tensor(d).dtype = DType::kFloat32;
    backward.outputs.push_back(d);
    if (!ctx.needs_gradient(level)) continue;
    if (ctx.graph().tensor(level).dtype == DType::kFloat32) {
      result[l] = {d, true};
    } else {
      casts.emplace_back(l, d);
    }
  }
  ctx.emit(backward);
  for (const auto& [l, d] : casts) {
    const TensorId cast = ctx.gradient_like(node.inputs[l]);
    ctx.emit(Node{"cast", {d}, {cast}, {{"n", double(ctx.graph().tensor(d).elements())}}, true});
    result[l] = {cast, true};
  }
  return result;
}

}  // namespace

const OpDefs& roi_align_ops() {
  static const OpDefs ops = {
      {"roi_align", "roi_align", OpGradient::kDifferentiable, roi_align_backward},
      {"roi_align_backward", "roi_align", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
