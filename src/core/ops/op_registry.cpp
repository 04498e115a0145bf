// The one list of op families (src/core/ops/op_registry.h). A new family adds its rows function here; a new op
// in an existing family adds only its row in the family's file.
#include "src/core/ops/op_registry.h"

#include "src/core/ops/op_bindings.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sb {

const OpDefs& op_registry() {
  static const OpDefs ops = [] {
    OpDefs all;
    const OpDefs* const families[] = {
        &instance_norm_ops(),
        // The core ops of the transformer and CNN workloads, with the memory ops and greedy decoding.
        &gemm_ops(),
        &activations_ops(),
        &bias_ops(),
        &layout_ops(),
        &select_column_ops(),
        &dropout_ops(),
        &layernorm_ops(),
        &embedding_ops(),
        &embedding_rows_ops(),
        &softmax_ops(),
        &cross_entropy_ops(),
        &span_loss_ops(),
        &cast_ops(),
        &memory_ops(),
        &conv2d_ops(),
        &batchnorm_ops(),
        &pooling_ops(),
        &upsample_ops(),
        &concat_ops(),
        &drop_path_ops(),
        &yolo_loss_ops(),
        &glu_ops(),
        &weight_norm_ops(),
        &scale_rows_ops(),
        &decode_ops(),
        // The GAN, detection, SAN and StyleGAN ops.
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
    for (const OpDefs* family : families) all.insert(all.end(), family->begin(), family->end());
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

bool is_loss_node(const Node& node) {
  if (node.op == "add") return node.attributes.count("loss_sum") != 0;
  const OpDef* def = find_op_def(node.op);
  return def != nullptr && def->loss;
}

std::string loss_op_names() {
  std::string names;
  for (const OpDef& op : op_registry()) {
    if (op.loss) names += (names.empty() ? "" : ", ") + std::string(op.name);
  }
  return names + ", or add_losses' sum of them";
}

}  // namespace sb

namespace sb::detail {

bool detached_op(const std::string& op) {
  const OpDef* def = find_op_def(op);
  return def != nullptr && def->detached;
}

const BackwardRule* find_backward_rule(const std::string& op) {
  const OpDef* def = find_op_def(op);
  return def != nullptr && def->backward ? &def->backward : nullptr;
}

}  // namespace sb::detail

namespace sb {

std::vector<std::string> backward_rule_ops() {
  std::vector<std::string> names;
  for (const OpDef& op : op_registry()) {
    if (op.backward) names.emplace_back(op.name);
  }
  return names;
}

bool has_backward_rule(const std::string& op) { return detail::find_backward_rule(op) != nullptr; }

}  // namespace sb
