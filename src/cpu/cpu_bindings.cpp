// The one list of the op families' CPU bindings (src/cpu/cpu_bindings.h) and the table built from it. A family
// added to the engine gets one line here; tests/unit/test_cpu_bindings.cpp checks that each family binds only
// its own ops (the op catalogue's family column) and that a name bound twice is refused.
#include "src/cpu/cpu_bindings.h"

#include <stdexcept>

#include "src/core/ops/op_bindings.h"

namespace sb {
namespace detail {

void bind_cpu_kernels(CpuKernelTable& table, std::initializer_list<std::pair<std::string, CpuKernel>> kernels) {
  for (const auto& [op, kernel] : kernels) {
    if (!table.emplace(op, kernel).second) {
      throw std::logic_error("the cpu kernel table binds op '" + op + "' twice (src/cpu/cpu_bindings.cpp)");
    }
  }
}

const std::vector<CpuFamilyBinding>& cpu_family_bindings() {
  static const std::vector<CpuFamilyBinding> families = {
      {"gemm", bind_gemm_cpu},
      {"bias", bind_bias_cpu},
      {"activations", bind_activations_cpu},
      {"memory", bind_memory_cpu},
      {"layout", bind_layout_cpu},
      {"select_column", bind_select_column_cpu},
      {"dropout", bind_dropout_cpu},
      {"layernorm", bind_layernorm_cpu},
      {"embedding", bind_embedding_cpu},
      {"embedding_rows", bind_embedding_rows_cpu},
      {"softmax", bind_softmax_cpu},
      {"cross_entropy", bind_cross_entropy_cpu},
      {"span_loss", bind_span_loss_cpu},
      {"san", bind_san_cpu},
      {"conv2d", bind_conv2d_cpu},
      {"batchnorm", bind_batchnorm_cpu},
      {"pooling", bind_pooling_cpu},
      {"upsample", bind_upsample_cpu},
      {"concat", bind_concat_cpu},
      {"drop_path", bind_drop_path_cpu},
      {"yolo_loss", bind_yolo_loss_cpu},
      {"glu", bind_glu_cpu},
      {"weight_norm", bind_weight_norm_cpu},
      {"scale_rows", bind_scale_rows_cpu},
      {"instance_norm", bind_instance_norm_cpu},
      {"conv_transpose2d", bind_conv_transpose2d_cpu},
      {"reflection_pad", bind_reflection_pad_cpu},
      {"pixel_losses", bind_pixel_losses_cpu},
      {"frozen_affine", bind_frozen_affine_cpu},
      {"roi_align", bind_roi_align_cpu},
      {"detection_losses", bind_detection_losses_cpu},
      {"proposals", bind_proposals_cpu},
      {"detection_targets", bind_detection_targets_cpu},
      {"blur", bind_blur_cpu},
      {"minibatch_stddev", bind_minibatch_stddev_cpu},
      {"gan_losses", bind_gan_losses_cpu},
      {"fused_conv_weight", bind_fused_conv_weight_cpu},
      {"pixel_norm", bind_pixel_norm_cpu},
      {"noise_injection", bind_noise_injection_cpu},
      {"style_modulation", bind_style_modulation_cpu},
      {"style_mix", bind_style_mix_cpu},
      {"ema", bind_ema_cpu},
      {"decode", bind_decode_cpu},
  };
  return families;
}

// The reason the kernel set is a table: an op missing here is found when the executor is built, not when the
// step reaches it.
const CpuKernelTable& cpu_kernels() {
  static const CpuKernelTable table = [] {
    CpuKernelTable built;
    for (const CpuFamilyBinding& family : cpu_family_bindings()) family.bind(built);
    return built;
  }();
  return table;
}

}  // namespace detail

std::vector<std::string> cpu_kernel_ops() {
  std::vector<std::string> names;
  for (const auto& entry : detail::cpu_kernels()) names.push_back(entry.first);
  return names;
}

bool has_cpu_kernel(const std::string& op) { return detail::cpu_kernels().count(op) != 0; }

}  // namespace sb
