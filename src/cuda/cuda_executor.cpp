// The CUDA executor (include/scalebench/executor.h): one cudaMalloc'd arena laid out by the plan, one stream,
// every node dispatched by op name to the sb::cuda kernel with the CPU kernel's arguments, instantiated for
// the dtype the graph stores the node's activations in (fp32, or bf16 / fp16 under mixed precision; parameters,
// their gradients, losses and statistics are fp32 either way). fp16 graphs scale the loss dynamically
// (include/scalebench/loss_scale.h): the scale sits in a small device buffer that the loss-backward kernels and
// optimizer_step read and optimizer_step updates, so no step waits for the host.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <type_traits>
#include <vector>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/core/ops/op_bindings.h"
#include "src/cuda/activations.h"
#include "src/cuda/batchnorm.h"
#include "src/cuda/bias.h"
#include "src/cuda/blur.h"
#include "src/cuda/cast.h"
#include "src/cuda/concat.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/detection_losses.h"
#include "src/cuda/detection_targets.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/drop_path.h"
#include "src/cuda/dropout.h"
#include "src/cuda/element.h"
#include "src/cuda/embedding.h"
#include "src/cuda/frozen_affine.h"
#include "src/cuda/fill.h"
#include "src/cuda/fused_conv_weight.h"
#include "src/cuda/gan_losses.h"
#include "src/cuda/gemm.h"
#include "src/cuda/decode.h"
#include "src/cuda/glu.h"
#include "src/cuda/instance_norm.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/layout.h"
#include "src/cuda/loss_mean.h"
#include "src/cuda/minibatch_stddev.h"
#include "src/cuda/optimizer.h"
#include "src/cuda/pixel_losses.h"
#include "src/cuda/pooling.h"
#include "src/cuda/proposals.h"
#include "src/cuda/random_uniform.h"
#include "src/cuda/reflection_pad.h"
#include "src/cuda/roi_align.h"
#include "src/cuda/san.h"
#include "src/cuda/scale_rows.h"
#include "src/cuda/select_column.h"
#include "src/cuda/softmax.h"
#include "src/cuda/span_loss.h"
#include "src/cuda/stream_scratch.h"
#include "src/cuda/stylegan_g_ops.h"
#include "src/cuda/upsample.h"
#include "src/cuda/weight_norm.h"
#include "src/cuda/yolo_loss.h"
#include "src/engine/conv2d_geometry.h"
#include "src/core/ops/detection_losses.h"
#include "src/core/ops/detection_targets.h"
#include "src/core/ops/proposals.h"
#include "src/core/ops/roi_align.h"

namespace sb {
namespace {

class CudaExecutor;
using Kernel = std::function<void(CudaExecutor&, const Node&)>;
const std::map<std::string, Kernel>& kernels();

template <typename T>
constexpr DType dtype_of_element() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, cuda::bf16>) return DType::kBFloat16;
  if constexpr (std::is_same_v<T, cuda::fp16>) return DType::kFloat16;
  if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
}

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }

// The largest stream-ordered scratch any node of the graph takes (one at a time: the nodes run in order).
uint64_t kernel_scratch_bytes(const Graph& graph) {
  uint64_t largest = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op == "bias_backward") largest = std::max(largest, cuda::bias_backward_scratch_bytes(size_attr(node, "cols")));
    if (node.op == "softmax_cross_entropy") largest = std::max(largest, cuda::cross_entropy_forward_scratch_bytes());
    if (node.op == "layernorm_backward") {
      largest = std::max(largest, cuda::layernorm_backward_scratch_bytes(size_attr(node, "cols")));
    }
    // Mask R-CNN's detection steps carve their sorts and masks out of the scratch (src/cuda/proposals.h).
    if (node.op == "rpn_proposals") {
      largest = std::max<uint64_t>(largest, cuda::rpn_proposals_scratch_bytes(detail::proposal_geometry(node.attributes)));
    }
    if (node.op == "rpn_targets") {
      largest = std::max<uint64_t>(largest, cuda::rpn_targets_scratch_bytes(detail::rpn_target_geometry(node.attributes)));
    }
    if (node.op == "roi_sample") {
      largest = std::max<uint64_t>(largest, cuda::roi_sample_scratch_bytes(detail::roi_sample_geometry(node.attributes)));
    }
    if (node.op == "bce_with_logits_loss" || node.op == "smooth_l1_loss") {
      largest = std::max<uint64_t>(largest,
                                   cuda::detection_loss_scratch_bytes(detail::class_selection(node.attributes).elements()));
    }
  }
  return largest;
}

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms, const LossScaleConfig& loss_scale)
      : Executor(graph, plan), gemm_math_(tf32_gemms ? cuda::GemmMath::kTf32 : cuda::GemmMath::kFp32),
        loss_scale_config_(loss_scale) {
    const bool scaled = scales_loss(graph, loss_scale);  // checked before anything is allocated
    for (const Node& node : graph.nodes()) {
      if (kernels().count(node.op) == 0) throw UsageError("the cuda device has no kernel for op '" + node.op + "'");
    }
    choose_conv_algorithms(tf32_gemms);  // may refuse a convolution: before anything is allocated
    arena_charge_ = AllocationCharge(plan.total_bytes, "the plan's arena");
    const cudaError_t status = cudaMalloc(&arena_, plan.total_bytes == 0 ? 1 : plan.total_bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory("out of GPU memory: the plan needs " + std::to_string(plan.total_bytes) + " bytes");
    }
    SB_CUDA_CHECK(status);
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // The alignment padding between parameters and between gradients is read by the flat optimizer, the
    // clipping norm and the bucket all-reduces: zero, not whatever the allocation held.
    SB_CUDA_CHECK(cudaMemsetAsync(arena_, 0, plan.total_bytes, stream_));
    SB_CUDA_CHECK(cudaMalloc(&scratch_, 64));  // loss sum (float) and counted rows (int64)
    reserve_outside_plan(graph);
    if (scaled) start_loss_scaling();
    initialize_state();
  }
  ~CudaExecutor() override {
    cudaStreamSynchronize(stream_);
    cuda::take_back_gemm_workspace(stream_);
    cuda::take_back_stream_scratch(stream_);
    cudaFree(gemm_workspace_);
    cudaFree(kernel_scratch_);
    for (cudaEvent_t event : marks_) cudaEventDestroy(event);
    cudaFree(scratch_);
    cudaFree(norm_scratch_);
    cudaFree(loss_scale_);
    cudaFree(optimizer_state_);
    cudaFree(arena_);
    cudaStreamDestroy(stream_);
  }

  void write_tensor(TensorId id, const void* host, size_t bytes) override {
    SB_CUDA_CHECK(cudaMemcpyAsync(u8(id), host, bytes, cudaMemcpyHostToDevice, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    counted_rows_.clear();  // new targets may count differently
  }
  void set_counted_rows(TensorId targets, int64_t rows) override { counted_rows_[targets] = rows; }
  void read_tensor(TensorId id, void* host, size_t bytes) override {
    SB_CUDA_CHECK(cudaMemcpyAsync(host, u8(id), bytes, cudaMemcpyDeviceToHost, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void run_nodes(size_t begin, size_t end) override {
    cuda::set_gemm_math(gemm_math_);
    for (size_t i = begin; i < end && i < graph_.nodes().size(); ++i) {
      const Node& node = graph_.nodes()[i];
      kernels().at(node.op)(*this, node);
    }
  }

  void optimizer_step(const OptimizerSettings& settings, int64_t step) override {
    ensure_optimizer_state(settings);
    const size_t n = plan_.parameter_bytes / sizeof(float);
    const float* grads = reinterpret_cast<const float*>(u8_at(plan_.gradient_region_offset));
    const bool needs_norm = settings.max_grad_norm > 0 || loss_scale_ != nullptr;  // clipping, the overflow test
    if (needs_norm) {
      if (norm_scratch_ == nullptr) {
        SB_CUDA_CHECK(
            cudaMalloc(reinterpret_cast<void**>(&norm_scratch_), cpu::kGradNormScratchDoubles * sizeof(double)));
      }
      cuda::grad_norm_squared(grads, static_cast<int64_t>(n), norm_scratch_, stream_);
    }
    cuda::optimizer_step(static_cast<float*>(arena_), grads, optimizer_state_, static_cast<int64_t>(n), settings, step,
                         needs_norm ? norm_scratch_ : nullptr, stream_, loss_scale_, loss_scale_config_);
  }

  void optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first, int64_t count) override {
    const auto n = static_cast<int64_t>(plan_.parameter_bytes / sizeof(float));
    if (!steps_in_ranges(settings)) {
      throw UsageError("optimizer_step_range: clipping and loss scaling need every gradient first");
    }
    if (first < 0 || count < 0 || first + count > n) {
      throw UsageError("optimizer_step_range: range outside the parameters");
    }
    ensure_optimizer_state(settings);
    auto* params = static_cast<float*>(arena_);
    const auto* grads = reinterpret_cast<const float*>(u8_at(plan_.gradient_region_offset));
    cuda::optimizer_step(params + first, grads + first, optimizer_state_ + first, count, settings, step, nullptr,
                         stream_, nullptr, {}, cpu::optimizer_state_stride(n));
  }
  bool steps_in_ranges(const OptimizerSettings& settings) const override {
    return settings.max_grad_norm == 0 && loss_scale_ == nullptr;
  }

  // A fresh optimizer and a fresh GradScaler: the trainer's phases each start from the initial weights, and
  // data-parallel ranks must start dp with the same loss scale, whatever overflows each saw alone in solo.
  void reset_optimizer_state() override {
    if (optimizer_state_ != nullptr) SB_CUDA_CHECK(cudaMemsetAsync(optimizer_state_, 0, state_bytes_, stream_));
    if (loss_scale_ != nullptr) {
      initial_loss_scale_ = initial_loss_scale_state(loss_scale_config_);
      SB_CUDA_CHECK(cudaMemcpyAsync(loss_scale_, &initial_loss_scale_, sizeof initial_loss_scale_,
                                    cudaMemcpyHostToDevice, stream_));
      SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }
  std::string node_detail(size_t index) const override {
    const auto it = conv_runners_.find(&graph_.nodes()[index]);
    return it == conv_runners_.end() ? std::string() : it->second->algorithm();
  }
  StreamHandle compute_stream() const override { return stream_; }
  void* arena_data() override { return arena_; }
  std::optional<LossScaleState> loss_scale_state() override {
    if (loss_scale_ == nullptr) return std::nullopt;
    LossScaleState state;
    SB_CUDA_CHECK(cudaMemcpyAsync(&state, loss_scale_, sizeof state, cudaMemcpyDeviceToHost, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return state;
  }
  // The loss's gradient seed on the device (S), or null (1) without loss scaling.
  const float* loss_gradient_scale() const { return loss_scale_ == nullptr ? nullptr : &loss_scale_->scale; }

  void mark(size_t index) override {
    while (marks_.size() <= index) {
      cudaEvent_t event = nullptr;
      SB_CUDA_CHECK(cudaEventCreate(&event));
      marks_.push_back(event);
    }
    SB_CUDA_CHECK(cudaEventRecord(marks_[index], stream_));
  }
  double elapsed_ms(size_t from, size_t to) override {
    SB_CUDA_CHECK(cudaEventSynchronize(marks_.at(to)));
    float ms = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_.at(from), marks_.at(to)));
    return ms;
  }

  unsigned char* u8_at(uint64_t offset) { return static_cast<unsigned char*>(arena_) + offset; }
  unsigned char* u8(TensorId id) { return static_cast<unsigned char*>(arena_) + plan_.offsets.at(static_cast<size_t>(id)); }
  // The tensor's storage as T; a kernel that would read or write it as another type is a graph error
  // (a bf16 activation where an fp32 parameter belongs), caught here rather than computed on.
  template <typename T>
  T* at(TensorId id) {
    const TensorInfo& info = graph_.tensor(id);
    if (info.dtype != dtype_of_element<T>()) {
      throw UsageError("cuda executor: tensor '" + info.name + "' is " + dtype_name(info.dtype) + ", the kernel wants " +
                       dtype_name(dtype_of_element<T>()));
    }
    return reinterpret_cast<T*>(u8(id));
  }
  cudaStream_t stream() const { return stream_; }
  float* loss_sum() { return static_cast<float*>(scratch_); }
  int64_t* counted() { return reinterpret_cast<int64_t*>(static_cast<char*>(scratch_) + 8); }

  const cuda::Conv2dRunner& conv_runner(const Node& node) const { return *conv_runners_.at(&node); }

  // Rows that count in a loss depend only on the targets, which the synthetic data fixes for the run: they
  // are read back once per loss node (one synchronisation) and reused as the backward's scale.
  int64_t counted_rows(const Node& loss_node) {
    const TensorId targets = loss_node.inputs[1];
    auto it = counted_rows_.find(targets);
    if (it != counted_rows_.end()) return it->second;
    int64_t count = 0;
    SB_CUDA_CHECK(cudaMemcpyAsync(&count, counted(), sizeof count, cudaMemcpyDeviceToHost, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    counted_rows_[targets] = count;
    return count;
  }

 private:
  // Whether the loss is scaled; UsageError for a config that cannot scale.
  static bool scales_loss(const Graph& graph, const LossScaleConfig& config) {
    if (config.mode == LossScaling::kOff) return false;
    if (config.growth_interval < 1 || !(config.initial_scale > 0)) {
      throw UsageError("loss scaling needs a positive initial scale and a growth interval >= 1");
    }
    if (config.mode == LossScaling::kOn) return true;
    for (const TensorInfo& info : graph.tensors()) {
      if (info.dtype == DType::kFloat16) return true;
    }
    return false;
  }
  void start_loss_scaling() {
    const LossScaleState initial = initial_loss_scale_state(loss_scale_config_);
    SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&loss_scale_), sizeof(LossScaleState)));
    SB_CUDA_CHECK(cudaMemcpyAsync(loss_scale_, &initial, sizeof initial, cudaMemcpyHostToDevice, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // What a step needs beyond the plan, allocated now so that no step can run out of memory halfway (and a batch
  // too large fails here, cleanly): the GEMM workspace of this executor's stream, and scratch for the largest
  // of its kernels' temporary buffers (bias_backward, layernorm_backward), both lent to the stream.
  void reserve_outside_plan(const Graph& graph) {
    const uint64_t scratch = kernel_scratch_bytes(graph);
    outside_plan_charge_ = AllocationCharge(cuda::gemm_workspace_bytes() + scratch, "the GEMM workspace and kernel scratch");
    const cudaError_t status = cudaMalloc(&gemm_workspace_, cuda::gemm_workspace_bytes());
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory("out of GPU memory for the GEMM workspace");
    }
    SB_CUDA_CHECK(status);
    cuda::lend_gemm_workspace(stream_, gemm_workspace_);
    if (scratch == 0) return;
    // A reserve in the stream-ordered memory pool was not enough: on H200 layernorm_backward's cudaMallocAsync
    // still failed mid-step next to a full arena. A buffer of our own cannot be taken back.
    const cudaError_t reserved = cudaMalloc(&kernel_scratch_, scratch);
    if (reserved == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory("out of GPU memory for " + std::to_string(scratch) + " bytes of kernel scratch");
    }
    SB_CUDA_CHECK(reserved);
    cuda::lend_stream_scratch(stream_, kernel_scratch_, scratch);
  }

  // Every conv pass gets its cuDNN algorithm here, once: within the bytes of its workspace tensor (the
  // graph builder's budget, src/engine/graph_builder_conv.cpp), in the dtype of its output.
  void choose_conv_algorithms(bool tf32) {
    static const std::map<std::string, cuda::ConvPass> passes = {
        {"conv2d", cuda::ConvPass::kForward},
        {"conv2d_backward_data", cuda::ConvPass::kBackwardData},
        {"conv2d_backward_filter", cuda::ConvPass::kBackwardFilter},
        {"conv_transpose2d", cuda::ConvPass::kBackwardData}};  // the adjoint of the conv its geometry describes
    for (const Node& node : graph_.nodes()) {
      auto pass = passes.find(node.op);
      if (pass == passes.end()) continue;
      conv_runners_[&node] = std::make_unique<cuda::Conv2dRunner>(
          conv2d_geometry(node.attributes), graph_.tensor(node.outputs[0]).dtype, tf32, pass->second,
          graph_.tensor(node.outputs[1]).bytes());
    }
  }

  // The optimizer's state buffers, allocated and zeroed on first use or when the optimizer changes.
  void ensure_optimizer_state(const OptimizerSettings& settings) {
    const size_t n = plan_.parameter_bytes / sizeof(float);
    const size_t stride = static_cast<size_t>(cpu::optimizer_state_stride(static_cast<int64_t>(n)));
    const size_t state_bytes = static_cast<size_t>(optimizer_state_buffers(settings.kind)) * stride * sizeof(float);
    if (optimizer_state_ != nullptr && state_bytes == state_bytes_ && state_kind_ == settings.kind) return;
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    cudaFree(optimizer_state_);
    optimizer_state_ = nullptr;
    state_charge_ = AllocationCharge();
    state_charge_ = AllocationCharge(state_bytes, "the optimizer's state");
    const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&optimizer_state_), state_bytes + 1);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      state_charge_ = AllocationCharge();
      throw OutOfMemory("out of GPU memory for the optimizer's state (" + std::to_string(state_bytes) + " bytes)");
    }
    SB_CUDA_CHECK(status);
    SB_CUDA_CHECK(cudaMemsetAsync(optimizer_state_, 0, state_bytes, stream_));
    state_bytes_ = state_bytes;
    state_kind_ = settings.kind;
  }

  AllocationCharge arena_charge_, state_charge_;  // the budget's count of arena_ and optimizer_state_
  AllocationCharge outside_plan_charge_;          // and of gemm_workspace_ and kernel_scratch_
  void* gemm_workspace_ = nullptr;
  void* kernel_scratch_ = nullptr;
  void* arena_ = nullptr;
  void* scratch_ = nullptr;
  float* optimizer_state_ = nullptr;  // optimizer_state_buffers(state_kind_) buffers of the parameters' size
  size_t state_bytes_ = 0;
  OptimizerKind state_kind_ = OptimizerKind::kAdamW;
  double* norm_scratch_ = nullptr;  // cpu::kGradNormScratchDoubles, for clipping and the overflow test
  cuda::GemmMath gemm_math_;
  LossScaleConfig loss_scale_config_;
  LossScaleState* loss_scale_ = nullptr;  // device; null without loss scaling
  LossScaleState initial_loss_scale_;     // the host copy reset_optimizer_state uploads
  cudaStream_t stream_ = nullptr;
  std::map<TensorId, int64_t> counted_rows_;
  std::vector<cudaEvent_t> marks_;
  std::map<const Node*, std::unique_ptr<cuda::Conv2dRunner>> conv_runners_;  // per conv pass node
};

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

DType dtype_of(const CudaExecutor& e, TensorId id) { return e.graph().tensor(id).dtype; }

// The factor a loss's backward seed carries inside a weighted sum of losses (GraphBuilder::add_losses), or 1.
float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

cpu::ResizeGeometry resize_geometry(const Node& n) {
  return cpu::ResizeGeometry{size_attr(n, "batch"), size_attr(n, "in_h"),  size_attr(n, "in_w"),
                             size_attr(n, "channels"), size_attr(n, "out_h"), size_attr(n, "out_w")};
}

cpu::ReflectionPadGeometry pad_geometry(const Node& n) {
  cpu::ReflectionPadGeometry g;
  g.batch = size_attr(n, "batch"), g.in_h = size_attr(n, "in_h"), g.in_w = size_attr(n, "in_w");
  g.channels = size_attr(n, "channels");
  g.top = size_attr(n, "top"), g.bottom = size_attr(n, "bottom");
  g.left = size_attr(n, "left"), g.right = size_attr(n, "right");
  return g;
}

cpu::MinibatchStddevGeometry stddev_geometry(const Node& n) {
  cpu::MinibatchStddevGeometry g;
  g.batch = size_attr(n, "batch"), g.height = size_attr(n, "height"), g.width = size_attr(n, "width");
  g.channels = size_attr(n, "channels"), g.group = size_attr(n, "group"), g.splits = size_attr(n, "splits");
  return g;
}

cpu::YoloGeometry yolo_geometry(const Node& n) {
  cpu::YoloGeometry g;
  g.batch = size_attr(n, "batch"), g.classes = size_attr(n, "classes"), g.boxes = size_attr(n, "boxes");
  g.grid[0] = size_attr(n, "g0"), g.grid[1] = size_attr(n, "g1"), g.grid[2] = size_attr(n, "g2");
  return g;
}

std::vector<int64_t> concat_widths(const Node& n) {
  std::vector<int64_t> widths;
  for (int64_t k = 0; k < size_attr(n, "parts"); ++k) {
    widths.push_back(size_attr(n, ("w" + std::to_string(k)).c_str()));
  }
  return widths;
}

// A and B share the compute dtype; C is the same or, for weight gradients under mixed precision, fp32.
void run_gemm(CudaExecutor& e, const Node& n) {
  const bool ta = size_attr(n, "transpose_a") != 0, tb = size_attr(n, "transpose_b") != 0;
  const int64_t m = size_attr(n, "m"), cols = size_attr(n, "n"), k = size_attr(n, "k");
  const DType operands = dtype_of(e, n.inputs[0]), result = dtype_of(e, n.outputs[0]);
  if (dtype_of(e, n.inputs[1]) != operands) throw UsageError("gemm: operands of different dtypes");
  // A bias (linear layers) has the result's dtype and is fused into the GEMM's epilogue.
  const bool has_bias = n.inputs.size() > 2;
  if (has_bias && dtype_of(e, n.inputs[2]) != result) throw UsageError("gemm: the bias must have the result's dtype");
  auto launch = [&](auto* a, auto* b, auto* c) {
    using C = std::remove_pointer_t<decltype(c)>;
    cuda::gemm_strided_batched(ta, tb, m, cols, k, float_attr(n, "alpha"), a, ta ? m : k, b, tb ? k : cols, 0.0f, c,
                               cols, size_attr(n, "batch"), m * k, k * cols, m * cols, e.stream(),
                               has_bias ? e.at<C>(n.inputs[2]) : nullptr);
  };
  if (operands == DType::kFloat32 && result == DType::kFloat32) {
    launch(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else if (operands == DType::kBFloat16 && result == DType::kBFloat16) {
    launch(e.at<cuda::bf16>(n.inputs[0]), e.at<cuda::bf16>(n.inputs[1]), e.at<cuda::bf16>(n.outputs[0]));
  } else if (operands == DType::kBFloat16 && result == DType::kFloat32) {
    launch(e.at<cuda::bf16>(n.inputs[0]), e.at<cuda::bf16>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else if (operands == DType::kFloat16 && result == DType::kFloat16) {
    launch(e.at<cuda::fp16>(n.inputs[0]), e.at<cuda::fp16>(n.inputs[1]), e.at<cuda::fp16>(n.outputs[0]));
  } else if (operands == DType::kFloat16 && result == DType::kFloat32) {
    launch(e.at<cuda::fp16>(n.inputs[0]), e.at<cuda::fp16>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else {
    throw UsageError(std::string("gemm: no kernel for ") + dtype_name(operands) + " operands and a " +
                     dtype_name(result) + " result");
  }
}

void copy(CudaExecutor& e, TensorId to, TensorId from) {
  SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(to), e.u8(from), e.graph().tensor(from).bytes(), cudaMemcpyDeviceToDevice,
                                e.stream()));
}

void run_cast(CudaExecutor& e, const Node& n) {
  const DType from = dtype_of(e, n.inputs[0]), to = dtype_of(e, n.outputs[0]);
  const int64_t count = size_attr(n, "n");
  if (from == to) return copy(e, n.outputs[0], n.inputs[0]);
  if (from == DType::kFloat32 && to == DType::kBFloat16) {
    return cuda::cast(e.at<float>(n.inputs[0]), e.at<cuda::bf16>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kBFloat16 && to == DType::kFloat32) {
    return cuda::cast(e.at<cuda::bf16>(n.inputs[0]), e.at<float>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kFloat32 && to == DType::kFloat16) {
    return cuda::cast(e.at<float>(n.inputs[0]), e.at<cuda::fp16>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kFloat16 && to == DType::kFloat32) {
    return cuda::cast(e.at<cuda::fp16>(n.inputs[0]), e.at<float>(n.outputs[0]), count, e.stream());
  }
  throw UsageError(std::string("cast: no kernel from ") + dtype_name(from) + " to " + dtype_name(to));
}

// Most ops store every activation operand in one element type: the type of their first output.
#define SB_TYPED(body)                                                                       \
  [](CudaExecutor& e, const Node& n) {                                                       \
    with_element_type(dtype_of(e, n.outputs[0]), n, [&](auto element) {                      \
      using T = decltype(element);                                                           \
      body;                                                                                  \
    });                                                                                      \
  }

// The detection losses: x in the compute dtype (dispatch on it), optional int32 class columns as the 4th input.
#define DETECTION_LOSS(body)                                                                     \
  [](CudaExecutor& e, const Node& n) {                                                           \
    with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {                          \
      using T = decltype(element);                                                               \
      const T* x = e.at<T>(n.inputs[0]);                                                         \
      const int32_t* columns = n.inputs.size() > 3 ? e.at<int32_t>(n.inputs[3]) : nullptr;      \
      body;                                                                                      \
    });                                                                                          \
  }

const std::map<std::string, Kernel>& kernels() {
  static const std::map<std::string, Kernel> table = {
      {"gemm", run_gemm},
      {"cast", run_cast},
      {"bias_backward",  // dy in the compute dtype, the bias gradient fp32: dispatch on the input
       [](CudaExecutor& e, const Node& n) {
         if (dtype_of(e, n.outputs[0]) != DType::kFloat32) throw UsageError("bias_backward writes an fp32 gradient");
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::bias_backward(e.at<T>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "rows"),
                               size_attr(n, "cols"), e.stream());
         });
       }},
      {"add", SB_TYPED({
         const T* b = e.at<T>(n.inputs[1]);
         if (n.attributes.count("weight_b") != 0) {  // a weighted sum of losses: a + w b
           cuda::scale_forward(b, e.at<T>(n.outputs[0]), size_attr(n, "n"), float_attr(n, "weight_b"), e.stream());
           b = e.at<T>(n.outputs[0]);
         }
         cuda::add_forward(e.at<T>(n.inputs[0]), b, e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream());
       })},
      {"add_n", SB_TYPED({  // the first two terms in one pass (no copy), then one pass per further term
         if (n.inputs.size() == 1) return copy(e, n.outputs[0], n.inputs[0]);
         cuda::add_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                           e.stream());
         for (size_t i = 2; i < n.inputs.size(); ++i) {
           cuda::add_forward(e.at<T>(n.outputs[0]), e.at<T>(n.inputs[i]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                             e.stream());
         }
       })},
      {"view", [](CudaExecutor&, const Node&) {}},  // shares its input's storage (planner.h)
      {"zero_fill",  // any dtype: all-zero bytes are 0 in fp32, bf16, fp16 and the integers
       [](CudaExecutor& e, const Node& n) {
         SB_CUDA_CHECK(cudaMemsetAsync(e.u8(n.outputs[0]), 0, e.graph().tensor(n.outputs[0]).bytes(), e.stream()));
       }},
      {"stack",  // byte copies: any dtype, the parts' and the output's being equal (graph builder)
       [](CudaExecutor& e, const Node& n) {
         const size_t part_bytes = e.graph().tensor(n.inputs[0]).bytes();
         for (size_t i = 0; i < n.inputs.size(); ++i) {
           SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[0]) + i * part_bytes, e.u8(n.inputs[i]), part_bytes,
                                         cudaMemcpyDeviceToDevice, e.stream()));
         }
       }},
      {"unstack",
       [](CudaExecutor& e, const Node& n) {
         const size_t part_bytes = e.graph().tensor(n.outputs[0]).bytes();
         for (size_t i = 0; i < n.outputs.size(); ++i) {
           SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[i]), e.u8(n.inputs[0]) + i * part_bytes, part_bytes,
                                         cudaMemcpyDeviceToDevice, e.stream()));
         }
       }},
      {"scale", SB_TYPED(cuda::scale_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                             float_attr(n, "factor"), e.stream()))},
      {"add_broadcast", SB_TYPED(cuda::add_broadcast_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                             e.at<T>(n.outputs[0]), size_attr(n, "repeats"),
                                                             size_attr(n, "block"), e.stream()))},
      {"swap_middle", SB_TYPED(cuda::swap_middle(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "a"),
                                                 size_attr(n, "b"), size_attr(n, "c"), size_attr(n, "d"),
                                                 e.stream()))},
      {"select_column", SB_TYPED(cuda::select_column_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "rows"), size_attr(n, "cols"),
                                                             size_attr(n, "column"), e.stream()))},
      {"select_column_backward",
       SB_TYPED(cuda::select_column_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                             size_attr(n, "cols"), size_attr(n, "column"), e.stream()))},
      // ConvS2S's ops: GLU and the row scaling in the compute dtype (the factors fp32), weight normalisation on
      // the fp32 parameters and gradients; grad_multiply's forward is a view (its backward is a `scale` node).
      {"glu", SB_TYPED(cuda::glu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                         size_attr(n, "cols"), e.stream()))},
      {"glu_backward", SB_TYPED(cuda::glu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                                   size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
      {"weight_norm",
       [](CudaExecutor& e, const Node& n) {
         cuda::weight_norm_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                   e.at<float>(n.outputs[1]), size_attr(n, "rows"), size_attr(n, "cols"), e.stream());
       }},
      {"weight_norm_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::weight_norm_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                    e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "rows"),
                                    size_attr(n, "cols"), e.stream());
       }},
      {"grad_multiply", [](CudaExecutor&, const Node&) {}},  // shares its input's storage (a view)
      {"scale_rows", SB_TYPED(cuda::scale_rows_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                       e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                                       size_attr(n, "cols"), e.stream()))},
      {"dropout", SB_TYPED(cuda::dropout_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),  // no mask kept
                                                 static_cast<uint8_t*>(nullptr), size_attr(n, "n"),
                                                 float_attr(n, "p"), e.seed(), e.dropout_offset(n), e.stream()))},
      {"gelu", SB_TYPED(cuda::gelu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"relu", SB_TYPED(cuda::relu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"tanh", SB_TYPED(cuda::tanh_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"gelu_backward", SB_TYPED(cuda::gelu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"relu_backward", SB_TYPED(cuda::relu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"tanh_backward", SB_TYPED(cuda::tanh_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"layernorm", SB_TYPED(cuda::layernorm_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                     e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                     e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]),
                                                     size_attr(n, "rows"), size_attr(n, "cols"),
                                                     float_attr(n, "epsilon"), e.stream()))},
      {"layernorm_backward",
       SB_TYPED(cuda::layernorm_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                         e.at<float>(n.inputs[3]), e.at<float>(n.inputs[4]), e.at<T>(n.outputs[0]),
                                         e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]), size_attr(n, "rows"),
                                         size_attr(n, "cols"), e.stream()))},
      {"embedding", SB_TYPED(cuda::embedding_forward(e.at<int32_t>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "tokens"),
                                                     size_attr(n, "dim"), size_attr(n, "vocab"), e.stream()))},
      {"embedding_backward",  // the output gradient in the compute dtype, the table's gradient fp32
       [](CudaExecutor& e, const Node& n) {
         SB_CUDA_CHECK(cudaMemsetAsync(e.u8(n.outputs[0]), 0, e.graph().tensor(n.outputs[0]).bytes(), e.stream()));
         with_element_type(dtype_of(e, n.inputs[1]), n, [&](auto element) {
           using T = decltype(element);
           cuda::embedding_backward_accumulate(e.at<int32_t>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                               e.at<float>(n.outputs[0]), size_attr(n, "tokens"), size_attr(n, "dim"),
                                               size_attr(n, "vocab"), size_attr(n, "padding_idx"), e.stream());
         });
       }},
      {"masked_softmax",
       SB_TYPED(cuda::masked_softmax_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                             size_attr(n, "heads"), size_attr(n, "q"), size_attr(n, "k"),
                                             float_attr(n, "scale"),
                                             n.inputs.size() > 1 ? e.at<int32_t>(n.inputs[1]) : nullptr,
                                             size_attr(n, "causal") != 0, e.stream()))},
      {"masked_softmax_backward",
       SB_TYPED(cuda::masked_softmax_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                              size_attr(n, "batch"), size_attr(n, "heads"), size_attr(n, "q"),
                                              size_attr(n, "k"), float_attr(n, "scale"),
                                              n.inputs.size() > 2 ? e.at<int32_t>(n.inputs[2]) : nullptr,
                                              size_attr(n, "causal") != 0, e.stream()))},
      {"softmax_cross_entropy",  // logits in the compute dtype; loss and statistics fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::softmax_cross_entropy_forward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                               e.at<float>(n.outputs[2]), e.at<float>(n.outputs[1]), e.loss_sum(),
                                               e.counted(), size_attr(n, "rows"), size_attr(n, "classes"),
                                               float_attr(n, "label_smoothing"),
                                               static_cast<int32_t>(size_attr(n, "ignore_index")), e.stream());
         });
         cuda::loss_mean(e.loss_sum(), e.counted(), e.at<float>(n.outputs[0]), e.stream());
         e.counted_rows(n);  // first time only: learn the backward's scale
       }},
      {"softmax_cross_entropy_backward", SB_TYPED({  // starts the backward pass: times the loss scale, if any
         const int64_t counted = e.counted_rows(n);
         cuda::softmax_cross_entropy_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                              e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]), size_attr(n, "rows"),
                                              size_attr(n, "classes"), float_attr(n, "label_smoothing"),
                                              static_cast<int32_t>(size_attr(n, "ignore_index")),
                                              counted > 0 ? gradient_weight(n) * e.loss_weight(n.inputs[1]) /
                                                                static_cast<float>(counted)
                                                          : 0.0f,
                                              e.stream(), e.loss_gradient_scale());
       })},
      {"span_loss",  // logits in the compute dtype; kept-row counts stay on the device (no host sync)
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::span_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                   e.at<int32_t>(n.inputs[3]), e.at<float>(n.outputs[2]), e.at<float>(n.outputs[1]),
                                   e.at<float>(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "seq"), e.stream());
         });
       }},
      // MT-DNN's SAN answer module (src/cuda/san.h): fp32 kernels only; the graph builder converts the floating
      // inputs of these ops to fp32 in a bf16 graph, so at<float> holds at any precision. Masks are uint8.
      {"gru_cell",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::gru_cell_forward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                e.at<float>(in[4]), e.at<float>(in[5]), e.at<float>(n.outputs[0]),
                                e.at<float>(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "input_size"),
                                size_attr(n, "hidden_size"), e.stream());
       }},
      {"gru_cell_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::gru_cell_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]),
                                 e.at<float>(in[4]), e.at<float>(in[5]), e.at<float>(out[0]), e.at<float>(out[1]),
                                 e.at<float>(out[2]), e.at<float>(out[3]), e.at<float>(out[4]), e.at<float>(out[5]),
                                 size_attr(n, "batch"), size_attr(n, "input_size"), size_attr(n, "hidden_size"),
                                 e.stream());
       }},
      {"san_self_attention",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         cuda::san_self_attention_forward(e.at<float>(in[0]), e.at<uint8_t>(in[1]), e.at<float>(in[2]),
                                          e.at<float>(in[3]), e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]),
                                          size_attr(n, "batch"), size_attr(n, "length"), size_attr(n, "hidden"),
                                          e.stream());
       }},
      {"san_self_attention_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_self_attention_backward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<uint8_t>(in[2]),
                                           e.at<float>(in[3]), e.at<float>(in[4]), e.at<float>(out[0]),
                                           e.at<float>(out[1]), e.at<float>(out[2]), size_attr(n, "batch"),
                                           size_attr(n, "length"), size_attr(n, "hidden"), e.stream());
       }},
      {"san_bilinear_attention",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_bilinear_attention_forward(e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]),
                                              e.at<uint8_t>(in[3]), e.at<float>(in[4]), e.at<float>(in[5]),
                                              e.at<float>(out[0]), e.at<float>(out[1]), e.at<float>(out[2]),
                                              size_attr(n, "batch"), size_attr(n, "length"),
                                              size_attr(n, "memory_hidden"), size_attr(n, "state_hidden"), e.stream());
       }},
      {"san_bilinear_attention_backward",
       [](CudaExecutor& e, const Node& n) {
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::san_bilinear_attention_backward(
             e.at<float>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<float>(in[3]), e.at<uint8_t>(in[4]),
             e.at<float>(in[5]), e.at<float>(in[6]), e.at<float>(in[7]), e.at<float>(out[0]), e.at<float>(out[1]),
             e.at<float>(out[2]), e.at<float>(out[3]), e.at<float>(out[4]), size_attr(n, "batch"),
             size_attr(n, "length"), size_attr(n, "memory_hidden"), size_attr(n, "state_hidden"), e.stream());
       }},
      {"san_merge",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_merge_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                 size_attr(n, "batch"), size_attr(n, "hidden"), e.stream());
       }},
      {"san_merge_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_merge_backward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                  e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "batch"),
                                  size_attr(n, "hidden"), e.stream());
       }},
      {"san_turn_mask",
       [](CudaExecutor& e, const Node& n) {
         cuda::philox_uniform(e.at<float>(n.outputs[0]), size_attr(n, "n"), e.seed(), e.dropout_offset(n),
                              e.stream());
         cuda::san_turn_mask(e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "batch"),
                             size_attr(n, "turns"), float_attr(n, "p"), e.stream());
       }},
      {"san_turn_average",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_turn_average_forward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                        e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]), size_attr(n, "turns"),
                                        size_attr(n, "batch"), size_attr(n, "classes"), e.stream());
       }},
      {"san_turn_average_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::san_turn_average_backward(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                         e.at<float>(n.inputs[2]), e.at<float>(n.outputs[0]), size_attr(n, "turns"),
                                         size_attr(n, "batch"), size_attr(n, "classes"), e.stream());
       }},
      // Convolutions through cuDNN with the algorithm chosen at construction, depthwise ones through
      // scalebench's kernels (src/cuda/conv2d.h); x, w, y and their gradients in one dtype; the bias (fp32) is
      // added after the forward pass.
      {"conv2d", SB_TYPED({
         e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                              e.stream());
         if (n.inputs.size() > 2) {
           cuda::bias_add_forward(e.at<T>(n.outputs[0]), e.at<float>(n.inputs[2]),
                                  size_attr(n, "batch") * size_attr(n, "out_h") * size_attr(n, "out_w"),
                                  size_attr(n, "out_c"), e.stream());
         }
       })},
      {"conv2d_backward_data", SB_TYPED(e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                             e.at<T>(n.outputs[0]), e.u8(n.outputs[1]), e.stream()))},
      {"conv2d_backward_filter", SB_TYPED(e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                               e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                                                               e.stream()))},
      // The GAN ops added for pix2pixHD (graph_builder_pix2pixhd.cpp). stop_gradient and discard_gradient are
      // views; the transposed convolution is cuDNN's backward-data pass of the conv its geometry describes (its
      // backward nodes are that conv's forward and backward-filter passes), its fp32 bias added after it.
      {"stop_gradient", [](CudaExecutor&, const Node&) {}},
      {"discard_gradient", [](CudaExecutor&, const Node&) {}},
      {"conv_transpose2d", SB_TYPED({
         e.conv_runner(n).run(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), e.u8(n.outputs[1]),
                              e.stream());
         if (n.inputs.size() > 2) {
           cuda::bias_add_forward(e.at<T>(n.outputs[0]), e.at<float>(n.inputs[2]),
                                  size_attr(n, "batch") * size_attr(n, "in_h") * size_attr(n, "in_w"),
                                  size_attr(n, "in_c"), e.stream());
         }
       })},
      {"instance_norm", SB_TYPED(cuda::instance_norm_forward(
                            e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), e.at<float>(n.outputs[1]),
                            e.at<float>(n.outputs[2]), size_attr(n, "batch"), size_attr(n, "pixels"),
                            size_attr(n, "channels"), float_attr(n, "epsilon"), e.u8(n.outputs[3]), e.stream()))},
      {"instance_norm_backward", SB_TYPED(cuda::instance_norm_backward(
                                     e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                     e.at<float>(n.inputs[3]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                     size_attr(n, "pixels"), size_attr(n, "channels"), e.u8(n.outputs[1]),
                                     e.stream()))},
      {"reflection_pad2d", SB_TYPED(cuda::reflection_pad2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                   pad_geometry(n), e.stream()))},
      {"reflection_pad2d_backward", SB_TYPED(cuda::reflection_pad2d_backward(e.at<T>(n.inputs[0]),
                                                                             e.at<T>(n.outputs[0]), pad_geometry(n),
                                                                             e.stream()))},
      // The mean losses: inputs in the compute dtype, the loss fp32 (dispatch on the input); the backward pass
      // starts here (its seed times the loss scale, if any).
      {"mse_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::mse_loss_forward(e.at<T>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                  float_attr(n, "target"), e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"mse_loss_backward", SB_TYPED(cuda::mse_loss_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "n"), float_attr(n, "target"),
                                                             gradient_weight(n), e.stream(),
                                                             e.loss_gradient_scale()))},
      {"l1_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::l1_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                 size_attr(n, "n"), e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"l1_loss_backward", SB_TYPED(cuda::l1_loss_backward(
                               e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                               n.outputs.size() > 1 ? e.at<T>(n.outputs[1]) : nullptr, size_attr(n, "n"),
                               gradient_weight(n), e.stream(), e.loss_gradient_scale()))},
      {"leaky_relu", SB_TYPED(cuda::leaky_relu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                       float_attr(n, "slope"), e.stream()))},
      {"leaky_relu_backward", SB_TYPED(cuda::leaky_relu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                                 e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                                 float_attr(n, "slope"), e.stream()))},
      {"sigmoid", SB_TYPED(cuda::sigmoid_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                 e.stream()))},
      {"sigmoid_backward", SB_TYPED(cuda::sigmoid_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                           e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      // BatchNorm (src/cuda/batchnorm.h): activations in T, statistics, parameters and running state fp32; the
      // node's uint8 workspace holds the partial sums (and, with statistics groups, each group's dgamma, dbeta).
      {"batchnorm", SB_TYPED({
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::batchnorm_forward(e.at<T>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<T>(out[0]),
                                 e.at<float>(out[1]), e.at<float>(out[2]), e.at<float>(in[3]), e.at<float>(in[4]),
                                 size_attr(n, "rows"), size_attr(n, "channels"), size_attr(n, "groups"),
                                 float_attr(n, "epsilon"), float_attr(n, "momentum"),
                                 static_cast<cpu::BatchNormActivation>(size_attr(n, "activation")),
                                 float_attr(n, "slope"), reinterpret_cast<float*>(e.u8(out[3])), e.stream());
       })},
      {"batchnorm_backward", SB_TYPED({
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::batchnorm_backward(e.at<T>(in[0]), e.at<T>(in[1]), e.at<T>(in[2]), e.at<float>(in[3]),
                                  e.at<float>(in[4]), e.at<float>(in[5]), e.at<T>(out[0]), e.at<float>(out[1]),
                                  e.at<float>(out[2]), size_attr(n, "rows"), size_attr(n, "channels"),
                                  size_attr(n, "groups"),
                                  static_cast<cpu::BatchNormActivation>(size_attr(n, "activation")),
                                  float_attr(n, "slope"), reinterpret_cast<float*>(e.u8(out[3])), e.stream());
       })},
      {"max_pool2d", SB_TYPED(cuda::max_pool2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       e.at<int32_t>(n.outputs[1]), conv2d_geometry(n.attributes),
                                                       e.stream()))},
      {"max_pool2d_backward", SB_TYPED(cuda::max_pool2d_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]),
                                                                 e.at<T>(n.outputs[0]), conv2d_geometry(n.attributes),
                                                                 e.stream()))},
      {"avg_pool2d", SB_TYPED(cuda::avg_pool2d_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       conv2d_geometry(n.attributes),
                                                       size_attr(n, "count_include_pad") != 0, e.stream()))},
      {"avg_pool2d_backward", SB_TYPED(cuda::avg_pool2d_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                 conv2d_geometry(n.attributes),
                                                                 size_attr(n, "count_include_pad") != 0,
                                                                 e.stream()))},
      {"upsample_nearest", SB_TYPED(cuda::upsample_nearest_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                   resize_geometry(n), e.stream()))},
      {"upsample_nearest_backward", SB_TYPED(cuda::upsample_nearest_backward(e.at<T>(n.inputs[0]),
                                                                             e.at<T>(n.outputs[0]),
                                                                             resize_geometry(n), e.stream()))},
      {"upsample_bilinear", SB_TYPED(cuda::upsample_bilinear_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                     resize_geometry(n),
                                                                     size_attr(n, "align_corners") != 0, e.stream()))},
      {"upsample_bilinear_backward",
       SB_TYPED(cuda::upsample_bilinear_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), resize_geometry(n),
                                                 size_attr(n, "align_corners") != 0, e.stream()))},
      {"drop_path", SB_TYPED(cuda::drop_path_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                     size_attr(n, "per_sample"), float_attr(n, "p"), e.seed(),
                                                     e.dropout_offset(n), e.stream()))},
      // YOLOv3's loss (src/cuda/yolo_loss.h): heads in the compute dtype, truth and loss fp32; the backward
      // starts the pass (dloss = 1, times the loss scale if any).
      {"yolo_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::yolo_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                   e.at<float>(n.inputs[3]), e.at<float>(n.outputs[0]), yolo_geometry(n),
                                   e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"yolo_loss_backward", SB_TYPED(cuda::yolo_loss_backward(
                                 e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                 e.at<float>(n.inputs[3]), e.at<T>(n.outputs[0]), e.at<T>(n.outputs[1]),
                                 e.at<T>(n.outputs[2]), yolo_geometry(n),
                                 gradient_weight(n) * e.loss_weight(n.inputs[3]),
                                 e.u8(n.outputs[3]), e.stream(), e.loss_gradient_scale()))},
      {"concat", SB_TYPED({
         std::vector<const T*> parts;
         for (TensorId id : n.inputs) parts.push_back(e.at<T>(id));
         cuda::concat_last(parts, concat_widths(n), e.at<T>(n.outputs[0]), size_attr(n, "rows"), e.stream());
       })},
      {"split", SB_TYPED({
         std::vector<T*> parts;
         for (TensorId id : n.outputs) parts.push_back(e.at<T>(id));
         cuda::split_last(e.at<T>(n.inputs[0]), parts, concat_widths(n), size_attr(n, "rows"), e.stream());
       })},
      // Mask R-CNN (src/cuda/frozen_affine.h, roi_align.h, detection_losses.h, proposals.h, detection_targets.h).
      {"frozen_affine", SB_TYPED(cuda::frozen_affine_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                             e.at<float>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "rows"), size_attr(n, "channels"),
                                                             size_attr(n, "relu") != 0, e.stream()))},
      {"frozen_affine_backward", SB_TYPED(cuda::frozen_affine_backward(
                                     e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                     e.at<T>(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "channels"),
                                     size_attr(n, "relu") != 0, e.stream()))},
      {"roi_align", SB_TYPED({
         const cpu::RoiAlignGeometry g = detail::roi_align_geometry(n.attributes);
         std::vector<const T*> levels;
         for (int l = 0; l < g.levels; ++l) levels.push_back(e.at<T>(n.inputs[size_t(l)]));
         cuda::roi_align_forward(levels.data(), e.at<float>(n.inputs.back()), e.at<T>(n.outputs[0]), g, e.stream());
       })},
      {"roi_align_backward",  // dy in the compute dtype, the level gradients fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           const cpu::RoiAlignGeometry g = detail::roi_align_geometry(n.attributes);
           std::vector<float*> levels;
           for (TensorId id : n.outputs) levels.push_back(e.at<float>(id));
           cuda::roi_align_backward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]), levels.data(), g, e.stream());
         });
       }},
      {"bce_with_logits_loss", DETECTION_LOSS(cuda::bce_with_logits_forward(
                                   x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                   e.at<float>(n.outputs[0]), detail::class_selection(n.attributes), e.stream()))},
      {"smooth_l1_loss", DETECTION_LOSS(cuda::smooth_l1_forward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                                                columns, e.at<float>(n.outputs[0]),
                                                                detail::class_selection(n.attributes),
                                                                float_attr(n, "beta"), e.stream()))},
      {"bce_with_logits_loss_backward",
       DETECTION_LOSS(cuda::bce_with_logits_backward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                                     e.at<T>(n.outputs[0]), detail::class_selection(n.attributes),
                                                     gradient_weight(n), e.stream(), e.loss_gradient_scale()))},
      {"smooth_l1_loss_backward",
       DETECTION_LOSS(cuda::smooth_l1_backward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                               e.at<T>(n.outputs[0]), detail::class_selection(n.attributes),
                                               float_attr(n, "beta"), gradient_weight(n), e.stream(),
                                               e.loss_gradient_scale()))},
      {"anchor_grid",
       [](CudaExecutor& e, const Node& n) {
         const std::vector<cpu::AnchorLevel> levels = detail::anchor_levels(n.attributes);
         cuda::anchor_grid(levels.data(), static_cast<int>(levels.size()), e.at<float>(n.outputs[0]), e.stream());
       }},
      {"rpn_proposals",
       [](CudaExecutor& e, const Node& n) {
         cuda::rpn_proposals(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                             detail::proposal_geometry(n.attributes), e.at<float>(n.outputs[0]),
                             e.at<int32_t>(n.outputs[1]), e.stream());
       }},
      {"rpn_targets",
       [](CudaExecutor& e, const Node& n) {
         cuda::rpn_targets(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]), e.step(),
                           detail::rpn_target_geometry(n.attributes), e.at<float>(n.outputs[0]),
                           e.at<float>(n.outputs[1]), e.at<float>(n.outputs[2]), e.at<float>(n.outputs[3]), e.stream());
       }},
      {"roi_sample",
       [](CudaExecutor& e, const Node& n) {
         const auto& o = n.outputs;
         const cpu::RoiSampleOutputs out{e.at<float>(o[0]), e.at<int32_t>(o[1]), e.at<float>(o[2]),
                                         e.at<float>(o[3]), e.at<int32_t>(o[4]), e.at<float>(o[5]),
                                         e.at<int32_t>(o[6]), e.at<int32_t>(o[7]), e.at<float>(o[8])};
         cuda::roi_sample(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                          e.at<int32_t>(n.inputs[3]), e.step(), detail::roi_sample_geometry(n.attributes), out,
                          e.stream());
       }},
      {"mask_targets",
       [](CudaExecutor& e, const Node& n) {
         cuda::mask_targets(e.at<float>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), e.at<float>(n.inputs[2]),
                            e.at<float>(n.inputs[3]), size_attr(n, "rois"), size_attr(n, "boxes"),
                            size_attr(n, "resolution"), e.at<float>(n.outputs[0]), e.at<float>(n.outputs[1]),
                            e.stream());
       }},
      // Greedy decoding (src/cuda/decode.h): the step counter stays on the device; copies switch inputs.
      {"argmax",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::argmax_rows(e.at<T>(n.inputs[0]), e.at<int32_t>(n.outputs[0]), size_attr(n, "rows"),
                             size_attr(n, "cols"), e.stream());
         });
       }},
      {"write_at_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::write_at_counter(e.u8(n.inputs[0]), e.u8(n.outputs[0]), e.at<int32_t>(n.inputs[1]),
                                size_attr(n, "outer"), size_attr(n, "time"), size_attr(n, "inner"),
                                size_attr(n, "element_bytes"), size_attr(n, "offset"), e.stream());
       }},
      {"fill_from_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::fill_from_counter(e.at<int32_t>(n.inputs[0]), e.at<int32_t>(n.outputs[0]), size_attr(n, "n"),
                                 size_attr(n, "offset"), e.stream());
       }},
      {"update_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::update_counter(e.at<int32_t>(n.outputs[0]), size_attr(n, "keep"), size_attr(n, "add"), e.stream());
       }},
      {"end_sentences",
       [](CudaExecutor& e, const Node& n) {
         cuda::end_sentences(e.at<int32_t>(n.outputs[0]), e.at<int32_t>(n.inputs[0]), size_attr(n, "rows"),
                             size_attr(n, "time"), static_cast<int32_t>(size_attr(n, "eos")),
                             static_cast<int32_t>(size_attr(n, "pad")), e.stream());
       }},
      {"copy",
       [](CudaExecutor& e, const Node& n) {
         SB_CUDA_CHECK(cudaMemcpyAsync(e.u8(n.outputs[0]), e.u8(n.inputs[0]), static_cast<size_t>(size_attr(n, "bytes")),
                                       cudaMemcpyDeviceToDevice, e.stream()));
       }},
      // StyleGAN's ops: activations in the compute dtype (SB_TYPED dispatches on the output's, or on the input's for
      // the nodes whose outputs are fp32), the losses' scores and the R1 input gradient converted to fp32 by the
      // builder, noise weights and the EMA fp32. conv2d_backward_data above is also the fused up-sampling conv's
      // forward pass and a second-order pass of R1.
      {"fill", SB_TYPED(cuda::fill(e.at<T>(n.outputs[0]), size_attr(n, "n"), float_attr(n, "value"), e.stream()))},
      {"blur2d", SB_TYPED(cuda::blur2d(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "batch"),
                                       size_attr(n, "height"), size_attr(n, "width"), size_attr(n, "channels"),
                                       e.stream()))},
      {"minibatch_stddev", SB_TYPED(cuda::minibatch_stddev_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                   stddev_geometry(n), e.stream()))},
      {"minibatch_stddev_backward",
       SB_TYPED(cuda::minibatch_stddev_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                                stddev_geometry(n), e.stream()))},
      {"minibatch_stddev_backward_backward",
       SB_TYPED(cuda::minibatch_stddev_backward_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                         e.at<T>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                         e.at<T>(n.outputs[1]), stddev_geometry(n), e.stream()))},
      {"softplus_loss",
       [](CudaExecutor& e, const Node& n) {
         cuda::softplus_loss_forward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                     float_attr(n, "sign"), e.stream());
       }},
      {"softplus_loss_backward",  // starts the backward pass: dloss = 1 (times its weight and the loss scale)
       [](CudaExecutor& e, const Node& n) {
         cuda::softplus_loss_backward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                      float_attr(n, "sign"), gradient_weight(n), e.stream(), e.loss_gradient_scale());
       }},
      {"squared_norm_loss",
       [](CudaExecutor& e, const Node& n) {
         cuda::squared_norm_loss_forward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                         size_attr(n, "batch"), float_attr(n, "scale"),
                                         reinterpret_cast<double*>(e.u8(n.outputs[1])), e.stream());
       }},
      {"squared_norm_loss_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::squared_norm_loss_backward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                          size_attr(n, "batch"), float_attr(n, "scale"), gradient_weight(n), e.stream(),
                                          e.loss_gradient_scale());
       }},
      {"fused_conv_weight", SB_TYPED(cuda::fused_conv_weight_forward(
                                e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "out_channels"),
                                size_attr(n, "in_channels"), float_attr(n, "factor"), e.stream()))},
      {"fused_conv_weight_backward", SB_TYPED(cuda::fused_conv_weight_backward(
                                         e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "out_channels"),
                                         size_attr(n, "in_channels"), float_attr(n, "factor"), e.stream()))},
      {"pixel_norm", SB_TYPED(cuda::pixel_norm_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                       size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
      {"pixel_norm_backward",
       SB_TYPED(cuda::pixel_norm_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                          size_attr(n, "rows"), size_attr(n, "cols"), e.stream()))},
      {"noise_injection",
       SB_TYPED(cuda::noise_injection_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                              e.at<T>(n.outputs[0]), size_attr(n, "batch"), size_attr(n, "pixels"),
                                              size_attr(n, "channels"), e.seed(), e.dropout_offset(n), e.stream()))},
      {"noise_injection_backward",  // dy in the compute dtype, the weight's gradient fp32
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::noise_injection_backward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                          reinterpret_cast<double*>(e.u8(n.outputs[1])), size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                          e.seed(), e.dropout_offset(n), e.stream());
         });
       }},
      {"style_modulation",
       SB_TYPED(cuda::style_modulation_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                               size_attr(n, "batch"), size_attr(n, "pixels"), size_attr(n, "channels"),
                                               e.stream()))},
      {"style_modulation_backward",
       SB_TYPED(cuda::style_modulation_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.inputs[2]),
                                                e.at<T>(n.outputs[0]), e.at<T>(n.outputs[1]),
                                                reinterpret_cast<double*>(e.u8(n.outputs[2])), size_attr(n, "batch"),
                                                size_attr(n, "pixels"), size_attr(n, "channels"), e.stream()))},
      {"style_mix", SB_TYPED({
         cuda::MutableLayerPointers layers{};
         for (size_t l = 0; l < n.outputs.size(); ++l) layers.at[l] = e.at<T>(n.outputs[l]);
         cuda::style_mix_forward(e.at<T>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), layers, size_attr(n, "layers"),
                                 size_attr(n, "batch"), size_attr(n, "dim"), e.stream());
       })},
      {"style_mix_backward", SB_TYPED({
         cuda::LayerPointers layers{};
         for (size_t l = 0; l + 1 < n.inputs.size(); ++l) layers.at[l] = e.at<T>(n.inputs[l]);
         cuda::style_mix_backward(layers, e.at<int32_t>(n.inputs.back()), e.at<T>(n.outputs[0]),
                                  size_attr(n, "layers"), size_attr(n, "batch"), size_attr(n, "dim"), e.stream());
       })},
      {"ema_update",  // the first step of a phase (executor step 0) copies: Gs starts as a clone of G
       [](CudaExecutor& e, const Node& n) {
         cuda::ema_update(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), size_attr(n, "n"), float_attr(n, "beta"),
                          e.step() == 0, e.stream());
       }},
      {"span_loss_backward",  // the loss starts the backward pass: dloss = 1, times the loss scale if any
       SB_TYPED(cuda::span_loss_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<int32_t>(n.inputs[2]),
                                         e.at<int32_t>(n.inputs[3]), e.at<float>(n.inputs[4]), e.at<T>(n.outputs[0]),
                                         e.at<T>(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "seq"),
                                         gradient_weight(n),
                                         e.stream(), e.loss_gradient_scale()))},
  };
  return table;
}

#undef SB_TYPED
#undef DETECTION_LOSS

}  // namespace

// The table's names for the op catalogue's test (src/core/ops/op_bindings.h): building the table makes
// std::functions only, no CUDA call, so a CPU-only test binary asks it too.
std::optional<std::vector<std::string>> cuda_kernel_ops() {
  std::vector<std::string> names;
  for (const auto& entry : kernels()) names.push_back(entry.first);
  return names;
}

uint64_t cuda_outside_plan_bytes(const Graph& graph) {
  return cuda::gemm_workspace_bytes() + kernel_scratch_bytes(graph);
}

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms,
                                             const LossScaleConfig& loss_scale) {
  return std::make_unique<CudaExecutor>(graph, plan, tf32_gemms, loss_scale);
}

}  // namespace sb
