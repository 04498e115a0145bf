// The proposals family (src/core/ops/proposals.h): GraphBuilder::anchor_grid and rpn_proposals, their (detached)
// rules and their ops' rows. Kernels: src/cpu/proposals.cpp, src/cuda/proposals.cu.
#include "src/core/ops/proposals.h"

#include <algorithm>
#include <string>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_checks.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/shape_text.h"

namespace sb {

TensorId GraphBuilder::anchor_grid(const std::vector<AnchorLevelSpec>& levels) {
  if (levels.empty() || levels.size() > 5) throw UsageError("anchor_grid: 1 to 5 levels");
  NodeAttributes a{{"levels", double(levels.size())}};
  int64_t anchors = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    const AnchorLevelSpec& s = levels[l];
    if (s.height < 1 || s.width < 1 || s.image_height < s.height || s.image_width < s.width || !(s.size > 0)) {
      throw UsageError("anchor_grid: level " + std::to_string(l) + " needs a map no larger than the image and a size > 0");
    }
    const std::string k = std::to_string(l);
    a["h" + k] = double(s.height), a["w" + k] = double(s.width), a["size" + k] = s.size;
    a["stride_h" + k] = double(s.image_height / s.height), a["stride_w" + k] = double(s.image_width / s.width);
    anchors += s.height * s.width * 3;
  }
  const TensorId out = activation(next_name("anchors"), {anchors, 4}, DType::kFloat32);
  graph_.add_node(Node{"anchor_grid", {}, {out}, a, false});
  return out;
}

Proposals GraphBuilder::rpn_proposals(TensorId objectness, TensorId deltas, TensorId anchors,
                                      const std::vector<int64_t>& level_anchors, int64_t image_height,
                                      int64_t image_width, const ProposalOptions& options) {
  objectness = converted(objectness, DType::kFloat32);
  deltas = converted(deltas, DType::kFloat32);
  const std::vector<int64_t> os = shape(objectness);
  if (os.size() != 2) throw UsageError("rpn_proposals: objectness must be (N, A), got " + shape_text(os));
  const int64_t batch = os[0], a_count = os[1];
  ops::require_shape(graph_.tensor(deltas), {batch, a_count, 4}, "rpn_proposals");
  ops::require_shape(graph_.tensor(anchors), {a_count, 4}, "rpn_proposals");
  ops::require_dtype(graph_.tensor(anchors), DType::kFloat32, "rpn_proposals");
  if (level_anchors.empty() || level_anchors.size() > 5) throw UsageError("rpn_proposals: 1 to 5 levels");
  NodeAttributes a{{"batch", double(batch)}, {"anchors", double(a_count)}, {"levels", double(level_anchors.size())},
                   {"pre_nms_top_n", double(options.pre_nms_top_n)}, {"post_nms_top_n", double(options.post_nms_top_n)},
                   {"nms_threshold", options.nms_threshold}, {"min_size", options.min_size},
                   {"image_height", double(image_height)}, {"image_width", double(image_width)},
                   {"decode", true_gradients_ ? 0.0 : 1.0}};
  int64_t total = 0, candidates = 0;
  for (size_t l = 0; l < level_anchors.size(); ++l) {
    a["a" + std::to_string(l)] = double(level_anchors[l]);
    total += level_anchors[l];
    candidates += std::min(level_anchors[l], options.pre_nms_top_n);
  }
  if (total != a_count) throw UsageError("rpn_proposals: the levels' anchors do not add up to " + std::to_string(a_count));
  if (options.pre_nms_top_n < 1 || options.post_nms_top_n < 1 || options.post_nms_top_n > candidates) {
    throw UsageError("rpn_proposals: " + std::to_string(options.post_nms_top_n) + " proposals from " +
                     std::to_string(candidates) + " candidates per image");
  }
  Proposals p;
  p.boxes = activation(next_name("proposals"), {batch, options.post_nms_top_n, 4}, DType::kFloat32);
  p.source = activation(next_name("proposal_anchors"), {batch, options.post_nms_top_n}, DType::kInt32);
  graph_.add_node(Node{"rpn_proposals", {objectness, deltas, anchors}, {p.boxes, p.source}, a, false});
  return p;
}

namespace {

// Detached (OpDef::detached): the rule says explicitly that no gradient flows to any input.
std::vector<detail::Contribution> detached(detail::BackwardContext&, const Node& node, const std::vector<TensorId>&) {
  return std::vector<detail::Contribution>(node.inputs.size());
}

}  // namespace

const OpDefs& proposals_ops() {
  // Forward-only, their outputs detached as torchvision's (no gradient reaches the RPN through the boxes).
  static const OpDefs ops = {
      {"anchor_grid", "proposals", OpGradient::kStopsGradient, detached, true},
      {"rpn_proposals", "proposals", OpGradient::kStopsGradient, detached, true},
  };
  return ops;
}

}  // namespace sb
