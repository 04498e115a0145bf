// What a family's CUDA node bindings are written with (the end of src/cuda/<family>.cu, or of the family's host
// .cpp): the attribute readers, the element-type dispatch and SB_TYPED, and each family's binding function, which
// src/cuda/cuda_bindings.cpp calls once, in its one list, to build cuda_kernel_table().
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "scalebench/error.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/cuda_executor.h"
#include "src/cuda/element.h"

namespace sb::cuda_binding {

// One op's binding as a family writes it: {"op", kernel} or {"op", kernel, scratch_bytes}.
struct CudaKernelEntry {
  CudaKernelEntry(std::string op_name, CudaKernel run, CudaScratchBytes scratch = {})
      : op(std::move(op_name)), kernel(std::move(run)), scratch_bytes(std::move(scratch)) {}
  std::string op;
  CudaKernel kernel;
  CudaScratchBytes scratch_bytes;
};

// Adds the entries to the table; std::logic_error for an op that is bound already (two families claiming one
// name would otherwise silently keep the first).
void add_kernels(CudaKernelTable& table, std::initializer_list<CudaKernelEntry> entries);

inline int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
inline float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }

// Calls f with a value of the element type stored for `type` (float, bf16 or fp16): the kernels are templates
// over it (src/cuda/element.h).
template <typename F>
void with_element_type(DType type, const Node& node, F&& f) {
  switch (type) {
    case DType::kFloat32: f(float{}); return;
    case DType::kBFloat16: f(cuda::bf16{}); return;
    case DType::kFloat16: f(cuda::fp16{}); return;
    default: throw UsageError("op '" + node.op + "' has no cuda kernel for " + dtype_name(type) + " tensors");
  }
}

inline DType dtype_of(const CudaExecutor& e, TensorId id) { return e.graph().tensor(id).dtype; }

// The factor a loss's backward seed carries inside a weighted sum of losses (GraphBuilder::add_losses), or 1.
inline float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

// The kernel arguments that change from one training step to the next, as StepValues (src/cuda/step_value.h):
// the host's value in an eager step, resolved on the device from the replay counter in a step replayed from a
// CUDA graph. The random streams' seed is not one: it is fixed for a phase.
// A node's first Philox block this step (dropout, drop_path, noise_injection, the SAN turn mask).
inline cuda::StepValue dropout_offset_value(const CudaExecutor& e, const Node& node) {
  return e.step_value(static_cast<int64_t>(e.dropout_offset(node)), static_cast<int64_t>(e.dropout_offset_per_step()));
}
// The executor's step() (Mask R-CNN's sampling draws, the EMA's first step).
inline cuda::StepValue step_count_value(const CudaExecutor& e) {
  return e.step_value(static_cast<int64_t>(e.step()), e.steps_per_training_step());
}

// A byte copy of a whole tensor on the executor's stream (a cast to the same dtype, add_n of one term).
inline void copy(CudaExecutor& e, TensorId to, TensorId from) {
  SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(to), e.u8(from), e.graph().tensor(from).bytes(), cudaMemcpyDeviceToDevice,
                                e.stream()));
}

// Each family's bindings, defined at the end of its file (src/cuda/<family>.cu unless noted).
void bind_gemm_cuda(CudaKernelTable& table);
void bind_cast_cuda(CudaKernelTable& table);
void bind_bias_cuda(CudaKernelTable& table);
void bind_activations_cuda(CudaKernelTable& table);
void bind_memory_cuda(CudaKernelTable& table);  // src/cuda/memory_bindings.cpp
void bind_layout_cuda(CudaKernelTable& table);
void bind_select_column_cuda(CudaKernelTable& table);
void bind_glu_cuda(CudaKernelTable& table);
void bind_weight_norm_cuda(CudaKernelTable& table);
void bind_scale_rows_cuda(CudaKernelTable& table);
void bind_dropout_cuda(CudaKernelTable& table);
void bind_layernorm_cuda(CudaKernelTable& table);
void bind_embedding_cuda(CudaKernelTable& table);
void bind_embedding_rows_cuda(CudaKernelTable& table);
void bind_softmax_cuda(CudaKernelTable& table);
void bind_cross_entropy_cuda(CudaKernelTable& table);
void bind_span_loss_cuda(CudaKernelTable& table);
void bind_san_cuda(CudaKernelTable& table);
void bind_conv2d_cuda(CudaKernelTable& table);            // src/cuda/conv2d_bindings.cpp
void bind_conv_transpose2d_cuda(CudaKernelTable& table);  // src/cuda/conv2d_bindings.cpp
void bind_instance_norm_cuda(CudaKernelTable& table);
void bind_reflection_pad_cuda(CudaKernelTable& table);
void bind_pixel_losses_cuda(CudaKernelTable& table);
void bind_batchnorm_cuda(CudaKernelTable& table);
void bind_pooling_cuda(CudaKernelTable& table);
void bind_upsample_cuda(CudaKernelTable& table);
void bind_drop_path_cuda(CudaKernelTable& table);
void bind_yolo_loss_cuda(CudaKernelTable& table);
void bind_concat_cuda(CudaKernelTable& table);
void bind_frozen_affine_cuda(CudaKernelTable& table);
void bind_roi_align_cuda(CudaKernelTable& table);
void bind_detection_losses_cuda(CudaKernelTable& table);
void bind_proposals_cuda(CudaKernelTable& table);
void bind_detection_targets_cuda(CudaKernelTable& table);
void bind_decode_cuda(CudaKernelTable& table);
void bind_blur_cuda(CudaKernelTable& table);
void bind_minibatch_stddev_cuda(CudaKernelTable& table);
void bind_gan_losses_cuda(CudaKernelTable& table);
void bind_fused_conv_weight_cuda(CudaKernelTable& table);
void bind_pixel_norm_cuda(CudaKernelTable& table);        // src/cuda/stylegan_g_ops.cu
void bind_noise_injection_cuda(CudaKernelTable& table);   // src/cuda/stylegan_g_ops.cu
void bind_style_modulation_cuda(CudaKernelTable& table);  // src/cuda/stylegan_g_ops.cu
void bind_style_mix_cuda(CudaKernelTable& table);         // src/cuda/stylegan_g_ops.cu
void bind_ema_cuda(CudaKernelTable& table);               // src/cuda/stylegan_g_ops.cu

}  // namespace sb::cuda_binding

// Most ops store every activation operand in one element type: the type of their first output.
#define SB_TYPED(body)                                                                       \
  [](CudaExecutor& e, const Node& n) {                                                       \
    with_element_type(dtype_of(e, n.outputs[0]), n, [&](auto element) {                      \
      using T = decltype(element);                                                           \
      body;                                                                                  \
    });                                                                                      \
  }
