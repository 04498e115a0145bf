// The one list of op families (src/core/ops/op_registry.h). A new family adds its rows function here; a new op
// in an existing family adds only its row in the family's file.
#include "src/core/ops/op_registry.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sb {

const OpDefs& op_registry() {
  static const OpDefs ops = [] {
    OpDefs all;
    for (const OpDefs* family : {&instance_norm_ops()}) all.insert(all.end(), family->begin(), family->end());
    // core-b's families (issue 24): the GAN, detection, SAN and StyleGAN ops.
    const OpDefs* const kCoreB[] = {
        &conv_transpose2d_ops(),
        &reflection_pad_ops(),
        &pixel_losses_ops(),
        &blur_ops(),
        &minibatch_stddev_ops(),
        &gan_losses_ops(),
        &fused_conv_weight_ops(),
        &pixel_norm_ops(),
        &noise_injection_ops(),
        &style_modulation_ops(),
        &style_mix_ops(),
        &ema_ops(),
        &frozen_affine_ops(),
        &roi_align_ops(),
        &detection_losses_ops(),
        &proposals_ops(),
        &detection_targets_ops(),
        &san_ops(),
    };
    for (const OpDefs* family : kCoreB) all.insert(all.end(), family->begin(), family->end());
    for (size_t i = 0; i < all.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (all[i].name == all[j].name) throw std::logic_error("op '" + std::string(all[i].name) + "' defined twice");
      }
      if ((all[i].gradient == OpGradient::kNotDifferentiable) == static_cast<bool>(all[i].backward)) {
        throw std::logic_error("op '" + std::string(all[i].name) + "': a backward rule iff it is differentiable " +
                               "or stops the gradient");
      }
    }
    return all;
  }();
  return ops;
}

const OpDef* find_op_def(std::string_view name) {
  const OpDefs& ops = op_registry();
  auto it = std::find_if(ops.begin(), ops.end(), [&](const OpDef& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

}  // namespace sb
