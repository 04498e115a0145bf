// CPU executor entries of Mask R-CNN's ops (src/engine/cpu_kernels_detection.h): each node's tensors bound to
// the sb::cpu reference with the sizes of src/core/ops/<family>.h. The samplers draw with the executor's
// step (Executor::step), so a step's forward replays exactly and the next one draws afresh.
#include "src/engine/cpu_kernels_detection.h"

#include <map>
#include <vector>

#include "src/cpu/frozen_affine.h"
#include "src/cpu/detection_losses.h"
#include "src/cpu/detection_targets.h"
#include "src/cpu/proposals.h"
#include "src/cpu/roi_align.h"

namespace sb::detail {
namespace {

float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

const int32_t* columns_of(CpuExecutor& e, const Node& n) { return n.inputs.size() > 3 ? e.i32(n.inputs[3]) : nullptr; }

void roi_align(CpuExecutor& e, const Node& n) {
  const cpu::RoiAlignGeometry g = roi_align_geometry(n.attributes);
  std::vector<const float*> levels;
  for (int l = 0; l < g.levels; ++l) levels.push_back(e.f32(n.inputs[size_t(l)]));
  cpu::roi_align_forward(levels.data(), e.f32(n.inputs.back()), e.f32(n.outputs[0]), g);
}

void roi_align_backward(CpuExecutor& e, const Node& n) {
  const cpu::RoiAlignGeometry g = roi_align_geometry(n.attributes);
  std::vector<float*> levels;
  for (TensorId id : n.outputs) levels.push_back(e.f32(id));
  cpu::roi_align_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), levels.data(), g);
}

void roi_sample(CpuExecutor& e, const Node& n) {
  const auto& o = n.outputs;
  const cpu::RoiSampleOutputs out{e.f32(o[0]), e.i32(o[1]), e.f32(o[2]), e.f32(o[3]), e.i32(o[4]),
                                  e.f32(o[5]), e.i32(o[6]), e.i32(o[7]), e.f32(o[8])};
  cpu::roi_sample(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]), e.step(),
                  roi_sample_geometry(n.attributes), out);
}

}  // namespace

const CpuKernelTable& detection_cpu_kernels() {
  static const CpuKernelTable table = {
      {"frozen_affine",
       [](CpuExecutor& e, const Node& n) {
         cpu::frozen_affine_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                    detection_size(n.attributes, "rows"), detection_size(n.attributes, "channels"),
                                    n.attributes.at("relu") != 0);
       }},
      {"frozen_affine_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::frozen_affine_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                     detection_size(n.attributes, "rows"), detection_size(n.attributes, "channels"),
                                     n.attributes.at("relu") != 0);
       }},
      {"roi_align", roi_align},
      {"roi_align_backward", roi_align_backward},
      {"bce_with_logits_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::bce_with_logits_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                             columns_of(e, n), class_selection(n.attributes));
       }},
      {"bce_with_logits_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::bce_with_logits_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), columns_of(e, n),
                                       e.f32(n.outputs[0]), class_selection(n.attributes), gradient_weight(n));
       }},
      {"smooth_l1_loss",
       [](CpuExecutor& e, const Node& n) {
         *e.f32(n.outputs[0]) = cpu::smooth_l1_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]),
                                                       columns_of(e, n), class_selection(n.attributes),
                                                       static_cast<float>(n.attributes.at("beta")));
       }},
      {"smooth_l1_loss_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::smooth_l1_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), columns_of(e, n),
                                 e.f32(n.outputs[0]), class_selection(n.attributes),
                                 static_cast<float>(n.attributes.at("beta")), gradient_weight(n));
       }},
      {"anchor_grid",
       [](CpuExecutor& e, const Node& n) {
         const std::vector<cpu::AnchorLevel> levels = anchor_levels(n.attributes);
         cpu::anchor_grid(levels.data(), static_cast<int>(levels.size()), e.f32(n.outputs[0]));
       }},
      {"rpn_proposals",
       [](CpuExecutor& e, const Node& n) {
         cpu::rpn_proposals(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), proposal_geometry(n.attributes),
                            e.f32(n.outputs[0]), e.i32(n.outputs[1]));
       }},
      {"rpn_targets",
       [](CpuExecutor& e, const Node& n) {
         cpu::rpn_targets(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.step(),
                          rpn_target_geometry(n.attributes), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                          e.f32(n.outputs[2]), e.f32(n.outputs[3]));
       }},
      {"roi_sample", roi_sample},
      {"mask_targets",
       [](CpuExecutor& e, const Node& n) {
         cpu::mask_targets(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                           detection_size(n.attributes, "rois"), detection_size(n.attributes, "boxes"),
                           detection_size(n.attributes, "resolution"), e.f32(n.outputs[0]), e.f32(n.outputs[1]));
       }},
  };
  return table;
}

}  // namespace sb::detail
