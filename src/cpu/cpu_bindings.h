// The CPU executor's node bindings: for each op name, the function that binds a node's tensors to its sb::cpu
// kernel with the sizes the graph builder stored in the node's attributes. Each op family binds its ops at the
// end of src/cpu/<family>.cpp (bind_<family>_cpu); cpu_bindings.cpp lists the families once and builds the one
// table the executor (src/cpu/cpu_executor.cpp) and sb::cpu_kernel_ops() (src/core/ops/op_bindings.h) read.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scalebench/executor.h"

namespace sb::detail {

using CpuKernel = std::function<void(CpuExecutor&, const Node&)>;
using CpuKernelTable = std::map<std::string, CpuKernel>;  // op name -> kernel

// Adds a family's kernels to table; throws std::logic_error naming the op when a name is bound already (by an
// earlier family, or twice in the list), so no binding is silently dropped.
void bind_cpu_kernels(CpuKernelTable& table, std::initializer_list<std::pair<std::string, CpuKernel>> kernels);

// One family's binding function, and the ONE list of them (cpu_bindings.cpp), in binding order.
struct CpuFamilyBinding {
  std::string_view family;  // the op catalogue's family (src/core/ops/op_catalogue.cpp): src/cpu/<family>.cpp
  void (*bind)(CpuKernelTable&);
};
const std::vector<CpuFamilyBinding>& cpu_family_bindings();

// Every family's kernels, built once from cpu_family_bindings().
const CpuKernelTable& cpu_kernels();

// Attribute readers the bindings share. Sizes and flags are stored as doubles (Node::attributes).
inline int64_t size_attr(const Node& node, const char* name) {
  return static_cast<int64_t>(node.attributes.at(name));
}
inline float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }
// The seed of a loss's backward pass: 1, or the loss's weight inside a weighted sum of losses
// (GraphBuilder::add_losses stores it as "gradient_weight").
inline float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

// The families' binding functions, each at the end of its src/cpu/<family>.cpp.
void bind_activations_cpu(CpuKernelTable& table);
void bind_batchnorm_cpu(CpuKernelTable& table);
void bind_bias_cpu(CpuKernelTable& table);
void bind_blur_cpu(CpuKernelTable& table);
void bind_concat_cpu(CpuKernelTable& table);
void bind_conv2d_cpu(CpuKernelTable& table);
void bind_conv_transpose2d_cpu(CpuKernelTable& table);
void bind_cross_entropy_cpu(CpuKernelTable& table);
void bind_decode_cpu(CpuKernelTable& table);
void bind_detection_losses_cpu(CpuKernelTable& table);
void bind_detection_targets_cpu(CpuKernelTable& table);
void bind_drop_path_cpu(CpuKernelTable& table);
void bind_dropout_cpu(CpuKernelTable& table);
void bind_ema_cpu(CpuKernelTable& table);
void bind_embedding_cpu(CpuKernelTable& table);
void bind_embedding_rows_cpu(CpuKernelTable& table);
void bind_frozen_affine_cpu(CpuKernelTable& table);
void bind_fused_conv_weight_cpu(CpuKernelTable& table);
void bind_gan_losses_cpu(CpuKernelTable& table);
void bind_gemm_cpu(CpuKernelTable& table);
void bind_glu_cpu(CpuKernelTable& table);
void bind_instance_norm_cpu(CpuKernelTable& table);
void bind_layernorm_cpu(CpuKernelTable& table);
void bind_layout_cpu(CpuKernelTable& table);
void bind_memory_cpu(CpuKernelTable& table);
void bind_minibatch_stddev_cpu(CpuKernelTable& table);
void bind_noise_injection_cpu(CpuKernelTable& table);
void bind_pixel_losses_cpu(CpuKernelTable& table);
void bind_pixel_norm_cpu(CpuKernelTable& table);
void bind_pooling_cpu(CpuKernelTable& table);
void bind_proposals_cpu(CpuKernelTable& table);
void bind_reflection_pad_cpu(CpuKernelTable& table);
void bind_roi_align_cpu(CpuKernelTable& table);
void bind_san_cpu(CpuKernelTable& table);
void bind_scale_rows_cpu(CpuKernelTable& table);
void bind_select_column_cpu(CpuKernelTable& table);
void bind_softmax_cpu(CpuKernelTable& table);
void bind_span_loss_cpu(CpuKernelTable& table);
void bind_style_mix_cpu(CpuKernelTable& table);
void bind_style_modulation_cpu(CpuKernelTable& table);
void bind_upsample_cpu(CpuKernelTable& table);
void bind_weight_norm_cpu(CpuKernelTable& table);
void bind_yolo_loss_cpu(CpuKernelTable& table);

}  // namespace sb::detail
