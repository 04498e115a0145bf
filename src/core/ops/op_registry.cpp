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

}  // namespace sb
