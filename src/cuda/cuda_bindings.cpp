// The CUDA kernel table: the one list of op families whose node bindings the CUDA executor runs. Each family binds
// its ops at the end of its own file (src/cuda/<family>.cu; declared in src/cuda/cuda_bindings.h); an op bound by
// two families is refused when the table is built.
#include "src/cuda/cuda_bindings.h"

#include <stdexcept>

#include "src/core/ops/op_bindings.h"

namespace sb {
namespace cuda_binding {

void add_kernels(CudaKernelTable& table, std::initializer_list<CudaKernelEntry> entries) {
  for (const CudaKernelEntry& entry : entries) {
    if (!table.emplace(entry.op, CudaBinding{entry.kernel, entry.scratch_bytes}).second) {
      throw std::logic_error("cuda kernel table: op '" + entry.op + "' is bound twice");
    }
  }
}

}  // namespace cuda_binding

const CudaKernelTable& cuda_kernel_table() {
  static const CudaKernelTable table = [] {
    using namespace cuda_binding;
    CudaKernelTable bound;
    bind_gemm_cuda(bound);
    bind_cast_cuda(bound);
    bind_bias_cuda(bound);
    bind_activations_cuda(bound);
    bind_memory_cuda(bound);
    bind_layout_cuda(bound);
    bind_select_column_cuda(bound);
    bind_glu_cuda(bound);
    bind_weight_norm_cuda(bound);
    bind_scale_rows_cuda(bound);
    bind_dropout_cuda(bound);
    bind_layernorm_cuda(bound);
    bind_embedding_cuda(bound);
    bind_embedding_rows_cuda(bound);
    bind_softmax_cuda(bound);
    bind_cross_entropy_cuda(bound);
    bind_span_loss_cuda(bound);
    bind_san_cuda(bound);
    bind_conv2d_cuda(bound);
    bind_conv_transpose2d_cuda(bound);
    bind_instance_norm_cuda(bound);
    bind_reflection_pad_cuda(bound);
    bind_pixel_losses_cuda(bound);
    bind_batchnorm_cuda(bound);
    bind_pooling_cuda(bound);
    bind_upsample_cuda(bound);
    bind_drop_path_cuda(bound);
    bind_yolo_loss_cuda(bound);
    bind_concat_cuda(bound);
    bind_frozen_affine_cuda(bound);
    bind_roi_align_cuda(bound);
    bind_detection_losses_cuda(bound);
    bind_proposals_cuda(bound);
    bind_detection_targets_cuda(bound);
    bind_decode_cuda(bound);
    bind_blur_cuda(bound);
    bind_minibatch_stddev_cuda(bound);
    bind_gan_losses_cuda(bound);
    bind_fused_conv_weight_cuda(bound);
    bind_pixel_norm_cuda(bound);
    bind_noise_injection_cuda(bound);
    bind_style_modulation_cuda(bound);
    bind_style_mix_cuda(bound);
    bind_ema_cuda(bound);
    return bound;
  }();
  return table;
}

// The table's names for the op catalogue's test (src/core/ops/op_bindings.h): building the table makes
// std::functions only, no CUDA call, so a CPU-only test binary asks it too.
std::optional<std::vector<std::string>> cuda_kernel_ops() {
  std::vector<std::string> names;
  for (const auto& entry : cuda_kernel_table()) names.push_back(entry.first);
  return names;
}

}  // namespace sb
