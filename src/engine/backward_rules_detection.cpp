// Backward rules of Mask R-CNN's ops (src/engine/backward_rules.h). The detection steps (anchors, proposals,
// target assignment, mask targets) have none: their outputs are detached, as in torchvision, so no gradient
// reaches the RPN through the proposal boxes; the rules below say so explicitly.
#include <map>
#include <string>

#include "src/core/ops/backward_rule.h"

namespace sb::detail {
namespace {

// dx = dy · scale (masked by the fused ReLU's output); nothing for the frozen scale and shift.
std::vector<Contribution> frozen_affine_backward(BackwardContext& ctx, const Node& node,
                                                 const std::vector<TensorId>& dout) {
  const TensorId x = node.inputs[0];
  if (!ctx.needs_gradient(x)) return {{}, {}, {}};
  const TensorId dx = ctx.gradient_like(x);
  ctx.emit(Node{"frozen_affine_backward", {dout[0], node.outputs[0], node.inputs[1]}, {dx}, node.attributes, true});
  return {{dx, true}, {}, {}};
}

// One node scatters dy into every level's gradient, accumulated in fp32 (atomics on the device: bf16 sums of
// many overlapping RoIs would lose most of their bits); a bf16 or fp16 graph casts each level's gradient once.
std::vector<Contribution> roi_align_backward(BackwardContext& ctx, const Node& node,
                                             const std::vector<TensorId>& dout) {
  const size_t levels = node.inputs.size() - 1;
  const TensorId rois = node.inputs.back();
  Node backward{"roi_align_backward", {dout[0], rois}, {}, node.attributes, true};
  std::vector<Contribution> result(node.inputs.size());
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

// Losses start the backward pass (the unit gradient, times gradient_weight inside a weighted sum).
BackwardRule loss_backward(const char* op) {
  return [op](BackwardContext& ctx, const Node& node, const std::vector<TensorId>&) {
    std::vector<Contribution> result(node.inputs.size());
    const TensorId x = node.inputs[0];
    if (!ctx.needs_gradient(x)) return result;
    const TensorId dx = ctx.gradient_like(x);
    ctx.emit(Node{op, node.inputs, {dx}, node.attributes, true});
    result[0] = {dx, true};
    return result;
  };
}

std::vector<Contribution> detached(BackwardContext&, const Node& node, const std::vector<TensorId>&) {
  return std::vector<Contribution>(node.inputs.size());
}

}  // namespace

const BackwardRuleTable& detection_backward_rules() {
  static const BackwardRuleTable table = {
      {"frozen_affine", frozen_affine_backward},
      {"roi_align", roi_align_backward},
      {"bce_with_logits_loss", loss_backward("bce_with_logits_loss_backward")},
      {"smooth_l1_loss", loss_backward("smooth_l1_loss_backward")},
      {"anchor_grid", detached},
      {"rpn_proposals", detached},
      {"rpn_targets", detached},
      {"roi_sample", detached},
      {"mask_targets", detached},
  };
  return table;
}

}  // namespace sb::detail
