// The CUDA executor (include/scalebench/executor.h) as its node bindings see it, and the binding types. The
// executor is generic: it runs each node through the kernel its op name is bound to in the one table
// (cuda_kernel_table(), built in src/cuda/cuda_bindings.cpp from each family's bindings at the end of
// src/cuda/<family>.cu), and reserves, before the first step, the largest stream scratch a bound kernel of the
// graph asks for (the binding's scratch_bytes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/element.h"
#include "src/cuda/gemm.h"
#include "src/cuda/step_value.h"

namespace sb {

class CudaExecutor;

// Runs one node on the executor's stream, its tensors read from the arena (CudaExecutor::at).
using CudaKernel = std::function<void(CudaExecutor&, const Node&)>;
// The stream-ordered scratch (bytes) a node's kernel takes, from the node's attributes. The executor reserves the
// largest over the graph once (the nodes run one at a time) and lends it to its stream (src/cuda/stream_scratch.h).
using CudaScratchBytes = std::function<uint64_t(const Node&)>;

struct CudaBinding {
  CudaKernel kernel;
  CudaScratchBytes scratch_bytes;  // empty: the kernel takes no stream scratch
};
using CudaKernelTable = std::map<std::string, CudaBinding>;

// Every op the CUDA executor runs (src/cuda/cuda_bindings.cpp). Building it makes std::functions only, no CUDA
// call, so it works without a GPU.
const CudaKernelTable& cuda_kernel_table();

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms, const LossScaleConfig& loss_scale,
               const ArenaMemory& arena = {});
  ~CudaExecutor() override;

  void write_tensor(TensorId id, const void* host, size_t bytes) override;
  void set_counted_rows(TensorId targets, int64_t rows) override { counted_rows_[targets] = rows; }
  void read_tensor(TensorId id, void* host, size_t bytes) override;
  void run_nodes(size_t begin, size_t end) override;

  void optimizer_step(const OptimizerSettings& settings, int64_t step) override;
  void optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first, int64_t count) override;
  bool steps_in_ranges(const OptimizerSettings& settings) const override {
    return settings.max_grad_norm == 0 && loss_scale_ == nullptr;
  }

  // A fresh optimizer and a fresh GradScaler: the trainer's phases each start from the initial weights, and
  // data-parallel ranks must start dp with the same loss scale, whatever overflows each saw alone in solo.
  void reset_optimizer_state() override;
  std::string node_detail(size_t index) const override;
  StreamHandle compute_stream() const override { return stream_; }
  void* arena_data() override { return arena_; }
  std::optional<LossScaleState> loss_scale_state() override;
  // The loss's gradient seed on the device (S), or null (1) without loss scaling.
  const float* loss_gradient_scale() const { return loss_scale_ == nullptr ? nullptr : &loss_scale_->scale; }

  void mark(size_t index) override;  // a node of the graph while a step is being captured
  double elapsed_ms(size_t from, size_t to) override;

  std::optional<std::string> why_no_step_graph() const override { return std::nullopt; }
  void begin_step_capture() override;
  std::optional<std::string> end_step_capture() override;
  void abort_step_capture() override;
  void replay_step() override;

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
  // scratch_'s 64 bytes: the loss sum (float) at 0, counted rows (int64) at 8, the step graph's replays at 16.
  float* loss_sum() { return static_cast<float*>(scratch_); }
  int64_t* counted() { return reinterpret_cast<int64_t*>(static_cast<char*>(scratch_) + 8); }

  const cuda::Conv2dRunner& conv_runner(const Node& node) const { return *conv_runners_.at(&node); }

  // A per-step scalar for a kernel (src/cuda/step_value.h): `host_value` as the step's host code computes it
  // (dropout_offset, step(), the optimizer's step count), growing by `per_step` from one training step to the
  // next; resolved on the device from the replay counter while a step is being captured into a CUDA graph.
  cuda::StepValue step_value(int64_t host_value, int64_t per_step) const {
    return cuda::StepValue{host_value, per_step, capturing_ ? replays_ : nullptr};
  }

  // Rows that count in a loss depend only on the targets, which the synthetic data fixes for the run: they
  // are read back once per loss node (one synchronisation) and reused as the backward's scale.
  int64_t counted_rows(const Node& loss_node);

 private:
  template <typename T>
  static constexpr DType dtype_of_element() {
    if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
    if constexpr (std::is_same_v<T, cuda::bf16>) return DType::kBFloat16;
    if constexpr (std::is_same_v<T, cuda::fp16>) return DType::kFloat16;
    if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
    if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  }

  // Whether the loss is scaled; UsageError for a config that cannot scale.
  static bool scales_loss(const Graph& graph, const LossScaleConfig& config);
  void start_loss_scaling();
  void reserve_outside_plan(const Graph& graph);
  void choose_conv_algorithms(bool tf32);
  void ensure_optimizer_state(const OptimizerSettings& settings);

  void allocate_shard(float*& buffer, AllocationCharge& charge, int64_t floats, const char* what);
  void allocate_gradient_shard(int64_t floats) override;
  float* gradient_shard_data() override { return gradient_shard_; }
  void copy_device_bytes(void* to, const void* from, uint64_t bytes) override;
  void zero_block_gaps(size_t block) override;
  void upload_block_gaps();
  void allocate_parameter_shard(int64_t floats) override;
  float* parameter_shard_data() override { return parameter_shard_; }
  void copy_from_host(void* to, const void* host, uint64_t bytes) override;
  void copy_to_host(void* host, const void* from, uint64_t bytes) override;

  AllocationCharge arena_charge_, state_charge_;  // the budget's count of arena_ and optimizer_state_
  AllocationCharge gradient_shard_charge_;        // and of gradient_shard_
  AllocationCharge parameter_shard_charge_;       // and of parameter_shard_
  float* gradient_shard_ = nullptr;               // gradient blocks: the optimizer's shard's gradients
  float* parameter_shard_ = nullptr;              // parameter blocks: its parameters
  // Gradient blocks: every block's gaps (cuda::zero_byte_ranges' lists, arena offsets), block after block on the
  // device, and where each block's start in them.
  uint64_t* gap_offsets_ = nullptr;
  uint32_t* gap_bytes_ = nullptr;
  std::vector<size_t> first_gap_;  // per block, then the total
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
  ArenaMemory arena_memory_;  // where arena_ came from (empty: cudaMalloc)
  LossScaleState* loss_scale_ = nullptr;  // device; null without loss scaling
  LossScaleState initial_loss_scale_;     // the host copy reset_optimizer_state uploads
  cudaStream_t stream_ = nullptr;
  std::map<TensorId, int64_t> counted_rows_;
  std::vector<cudaEvent_t> marks_;
  std::map<const Node*, std::unique_ptr<cuda::Conv2dRunner>> conv_runners_;  // per conv pass node
  bool capturing_ = false;      // a step is being captured into a CUDA graph
  int64_t* replays_ = nullptr;  // device, in scratch_: replays of the captured step so far (StepValue::replays)
  cudaGraphExec_t step_graph_ = nullptr;
  void drop_step_graph();
};

}  // namespace sb
