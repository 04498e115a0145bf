// The CUDA executor (include/scalebench/executor.h, src/cuda/cuda_executor.h): one cudaMalloc'd arena laid out by
// the plan, one stream, every node dispatched by op name to the kernel its family binds (cuda_kernel_table(),
// src/cuda/cuda_bindings.cpp) with the CPU kernel's arguments, instantiated for the dtype the graph stores the
// node's activations in (fp32, or bf16 / fp16 under mixed precision; parameters, their gradients, losses and
// statistics are fp32 either way). fp16 graphs scale the loss dynamically (include/scalebench/loss_scale.h): the
// scale sits in a small device buffer that the loss-backward kernels and optimizer_step read and optimizer_step
// updates, so no step waits for the host.
#include "src/cuda/cuda_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "scalebench/allocation_budget.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/fill.h"
#include "src/cuda/gemm.h"
#include "src/cuda/optimizer.h"
#include "src/cuda/step_replays.h"
#include "src/cuda/stream_scratch.h"
#include "src/core/ops/conv2d.h"

namespace sb {
namespace {

// The largest stream-ordered scratch any node of the graph takes (one at a time: the nodes run in order), as
// its op's binding sizes it (CudaBinding::scratch_bytes).
uint64_t kernel_scratch_bytes(const Graph& graph) {
  const CudaKernelTable& table = cuda_kernel_table();
  uint64_t largest = 0;
  for (const Node& node : graph.nodes()) {
    const auto binding = table.find(node.op);
    if (binding != table.end() && binding->second.scratch_bytes) {
      largest = std::max(largest, binding->second.scratch_bytes(node));
    }
  }
  return largest;
}

}  // namespace

CudaExecutor::CudaExecutor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms,
                           const LossScaleConfig& loss_scale, const ArenaMemory& arena)
    : Executor(graph, plan), gemm_math_(tf32_gemms ? cuda::GemmMath::kTf32 : cuda::GemmMath::kFp32),
      loss_scale_config_(loss_scale), arena_memory_(arena) {
  const bool scaled = scales_loss(graph, loss_scale);  // checked before anything is allocated
  for (const Node& node : graph.nodes()) {
    if (cuda_kernel_table().count(node.op) == 0) {
      throw UsageError("the cuda device has no kernel for op '" + node.op + "'");
    }
  }
  choose_conv_algorithms(tf32_gemms);  // may refuse a convolution: before anything is allocated
  arena_charge_ = AllocationCharge(plan.total_bytes, "the plan's arena");
  if (arena_memory_.allocate) {
    arena_ = arena_memory_.allocate(plan.total_bytes == 0 ? 1 : plan.total_bytes);
  } else {
    const cudaError_t status = cudaMalloc(&arena_, plan.total_bytes == 0 ? 1 : plan.total_bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory("out of GPU memory: the plan needs " + std::to_string(plan.total_bytes) + " bytes");
    }
    SB_CUDA_CHECK(status);
  }
  SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // The alignment padding between parameters and between gradients is read by the flat optimizer, the
  // clipping norm and the bucket all-reduces: zero, not whatever the allocation held.
  SB_CUDA_CHECK(cudaMemsetAsync(arena_, 0, plan.total_bytes, stream_));
  SB_CUDA_CHECK(cudaMalloc(&scratch_, 64));  // loss sum (float), counted rows and graph replays (int64)
  replays_ = reinterpret_cast<int64_t*>(static_cast<char*>(scratch_) + 16);
  reserve_outside_plan(graph);
  if (scaled) start_loss_scaling();
  initialize_state();
  if (plan.gradients_in_blocks) upload_block_gaps();
}

// A shard beside the arena (gradients or parameters), zeroed; the old one freed first (its reads waited for).
void CudaExecutor::allocate_shard(float*& buffer, AllocationCharge& charge, int64_t floats, const char* what) {
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old shard may still be read
  cudaFree(buffer);
  buffer = nullptr;
  charge = AllocationCharge();
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float);
  charge = AllocationCharge(bytes, what);
  const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&buffer), bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemory(std::string("out of GPU memory: ") + what + " needs " + std::to_string(bytes) + " bytes");
  }
  SB_CUDA_CHECK(status);
  SB_CUDA_CHECK(cudaMemsetAsync(buffer, 0, bytes, stream_));
}

void CudaExecutor::allocate_gradient_shard(int64_t floats) {
  allocate_shard(gradient_shard_, gradient_shard_charge_, floats, "the gradient shard");
}

void CudaExecutor::allocate_parameter_shard(int64_t floats) {
  allocate_shard(parameter_shard_, parameter_shard_charge_, floats, "the parameter shard");
}

void CudaExecutor::copy_from_host(void* to, const void* host, uint64_t bytes) {
  SB_CUDA_CHECK(cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::copy_to_host(void* host, const void* from, uint64_t bytes) {
  SB_CUDA_CHECK(cudaMemcpyAsync(host, from, bytes, cudaMemcpyDeviceToHost, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::copy_device_bytes(void* to, const void* from, uint64_t bytes) {
  SB_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_));
}

// One kernel per block over its gaps (a few hundred bytes each, a block's padding at most ranks x 256), instead of a
// memset of the whole block: the gradients are written whole by their writers.
void CudaExecutor::zero_block_gaps(size_t block) {
  const size_t first = first_gap_[block], count = first_gap_[block + 1] - first;
  if (count > 0) cuda::zero_byte_ranges(arena_, gap_offsets_ + first, gap_bytes_ + first, count, stream_);
}

void CudaExecutor::upload_block_gaps() {
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> bytes;
  for (const GradientBlock& block : plan_.gradient_blocks) {
    first_gap_.push_back(offsets.size());
    for (const ByteRange& gap : block.gaps) {
      offsets.push_back(block.offset + gap.offset);
      bytes.push_back(static_cast<uint32_t>(gap.bytes));
    }
  }
  first_gap_.push_back(offsets.size());
  if (offsets.empty()) return;
  SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&gap_offsets_), offsets.size() * sizeof(uint64_t)));
  SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&gap_bytes_), bytes.size() * sizeof(uint32_t)));
  SB_CUDA_CHECK(cudaMemcpyAsync(gap_offsets_, offsets.data(), offsets.size() * sizeof(uint64_t), cudaMemcpyHostToDevice,
                                stream_));
  SB_CUDA_CHECK(
      cudaMemcpyAsync(gap_bytes_, bytes.data(), bytes.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaExecutor::~CudaExecutor() {
  if (capturing_) abort_step_capture();
  cudaStreamSynchronize(stream_);
  drop_step_graph();
  cuda::take_back_gemm_workspace(stream_);
  cuda::take_back_stream_scratch(stream_);
  cudaFree(gemm_workspace_);
  cudaFree(kernel_scratch_);
  for (cudaEvent_t event : marks_) cudaEventDestroy(event);
  cudaFree(scratch_);
  cudaFree(norm_scratch_);
  cudaFree(loss_scale_);
  cudaFree(optimizer_state_);
  cudaFree(gradient_shard_);
  cudaFree(parameter_shard_);
  cudaFree(gap_offsets_);
  cudaFree(gap_bytes_);
  if (arena_memory_.release) {
    arena_memory_.release(arena_);
  } else {
    cudaFree(arena_);
  }
  cudaStreamDestroy(stream_);
}

void CudaExecutor::write_tensor(TensorId id, const void* host, size_t bytes) {
  if (write_parameter(id, host, bytes)) return;
  SB_CUDA_CHECK(cudaMemcpyAsync(u8(id), host, bytes, cudaMemcpyHostToDevice, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  counted_rows_.clear();  // new targets may count differently
}

void CudaExecutor::read_tensor(TensorId id, void* host, size_t bytes) {
  if (read_parameter(id, host, bytes)) return;
  SB_CUDA_CHECK(cudaMemcpyAsync(host, u8(id), bytes, cudaMemcpyDeviceToHost, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::run_nodes(size_t begin, size_t end) {
  ensure_gradient_shard();
  ensure_parameter_shard();
  cuda::set_gemm_math(gemm_math_);
  for (size_t i = begin; i < end && i < graph_.nodes().size(); ++i) {
    const Node& node = graph_.nodes()[i];
    before_node(i);
    cuda_kernel_table().at(node.op).kernel(*this, node);
    after_node(i);
  }
}

void CudaExecutor::optimizer_step(const OptimizerSettings& settings, int64_t step) {
  ensure_optimizer_state(settings);
  const std::vector<ShardRange>& shard = optimizer_shard();
  const bool needs_norm = settings.max_grad_norm > 0 || loss_scale_ != nullptr;  // clipping, the overflow test
  if (needs_norm) {
    if (norm_scratch_ == nullptr) {
      SB_CUDA_CHECK(
          cudaMalloc(reinterpret_cast<void**>(&norm_scratch_), cpu::kGradNormScratchDoubles * sizeof(double)));
    }
    if (plan_.gradients_in_blocks) {  // the gradient shard, packed: one sum
      ensure_gradient_shard();
      cuda::grad_norm_squared(gradient_shard_, optimizer_shard_count(), norm_scratch_, stream_);
    } else if (norm_across_ranks_) {
      for (size_t i = 0; i < shard.size(); ++i) {
        cuda::grad_norm_squared(gradients_of(shard[i].first, shard[i].count), shard[i].count, norm_scratch_, stream_,
                                i > 0);
      }
    } else {
      cuda::grad_norm_squared(gradients_of(0, 0), static_cast<int64_t>(plan_.parameter_bytes / sizeof(float)),
                              norm_scratch_, stream_);
    }
    // The shard's gradients alone are reduced: their squares, summed over the ranks.
    if (norm_across_ranks_) norm_across_ranks_(norm_scratch_, stream_);
  }
  // The step count grows by the sub-step count per training step (sub_steps.h, optimizer_step_number). The update
  // covers the optimizer's shard (every parameter unless set_optimizer_shard), range after range, each with its
  // part of the packed state; the loss scale is replaced after the last.
  const int64_t stride = cpu::optimizer_state_stride(optimizer_shard_count());
  int64_t state = 0;
  for (size_t i = 0; i < shard.size(); ++i) {
    cuda::optimizer_step(parameters_at(shard[i].first, state), gradients_at(shard[i].first, state),
                         optimizer_state_ + state, shard[i].count, settings,
                         step_value(step, steps_per_training_step()), needs_norm ? norm_scratch_ : nullptr, stream_,
                         loss_scale_, loss_scale_config_, stride, i + 1 == shard.size());
    state += shard[i].count;
  }
}

void CudaExecutor::optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first,
                                        int64_t count) {
  if (!steps_in_ranges(settings)) {
    throw UsageError("optimizer_step_range: clipping and loss scaling need every gradient first");
  }
  const int64_t state = optimizer_state_offset(first, count);
  ensure_optimizer_state(settings);
  cuda::optimizer_step(parameters_at(first, state), gradients_at(first, state), optimizer_state_ + state, count, settings,
                       step_value(step, steps_per_training_step()), nullptr, stream_, nullptr, {},
                       cpu::optimizer_state_stride(optimizer_shard_count()));
}

void CudaExecutor::reset_optimizer_state() {
  if (optimizer_state_ != nullptr) SB_CUDA_CHECK(cudaMemsetAsync(optimizer_state_, 0, state_bytes_, stream_));
  if (loss_scale_ != nullptr) {
    initial_loss_scale_ = initial_loss_scale_state(loss_scale_config_);
    SB_CUDA_CHECK(cudaMemcpyAsync(loss_scale_, &initial_loss_scale_, sizeof initial_loss_scale_,
                                  cudaMemcpyHostToDevice, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
}

std::string CudaExecutor::node_detail(size_t index) const {
  const auto it = conv_runners_.find(&graph_.nodes()[index]);
  return it == conv_runners_.end() ? std::string() : it->second->algorithm();
}

std::optional<LossScaleState> CudaExecutor::loss_scale_state() {
  if (loss_scale_ == nullptr) return std::nullopt;
  LossScaleState state;
  SB_CUDA_CHECK(cudaMemcpyAsync(&state, loss_scale_, sizeof state, cudaMemcpyDeviceToHost, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return state;
}

void CudaExecutor::mark(size_t index) {
  while (marks_.size() <= index) {
    cudaEvent_t event = nullptr;
    SB_CUDA_CHECK(cudaEventCreate(&event));
    marks_.push_back(event);
  }
  // In a capture, an external record is a node of the graph: every replay stamps the mark again.
  SB_CUDA_CHECK(capturing_ ? cudaEventRecordWithFlags(marks_[index], stream_, cudaEventRecordExternal)
                           : cudaEventRecord(marks_[index], stream_));
}

// Thread-local capture: this thread's calls that cannot be captured (a synchronisation, an allocation) fail
// the capture, and the trainer falls back to eager steps with the reason; other threads are not affected.
void CudaExecutor::begin_step_capture() {
  drop_step_graph();
  ensure_gradient_shard();  // an allocation cannot be captured
  ensure_parameter_shard();
  SB_CUDA_CHECK(cudaMemsetAsync(replays_, 0, sizeof(int64_t), stream_));  // before the capture: not part of it
  SB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

std::optional<std::string> CudaExecutor::end_step_capture() {
  if (!capturing_) return std::string("no capture was begun");
  cudaError_t status = cuda::advance_replays(replays_, stream_);  // the graph's last node
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  capturing_ = false;
  if (status == cudaSuccess) status = ended;
  if (status == cudaSuccess && graph == nullptr) return std::string("the capture recorded no graph");
  if (status == cudaSuccess) status = cudaGraphInstantiate(&step_graph_, graph, 0);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (status != cudaSuccess) {
    cudaGetLastError();  // capture errors are not sticky: the stream runs eager steps on
    step_graph_ = nullptr;
    return std::string("capturing the step failed: ") + cudaGetErrorString(status);
  }
  return std::nullopt;
}

void CudaExecutor::abort_step_capture() {
  if (!capturing_) return;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  capturing_ = false;
  cudaGetLastError();
}

void CudaExecutor::replay_step() {
  if (step_graph_ == nullptr) throw UsageError("replay_step: no step graph was captured");
  SB_CUDA_CHECK(cudaGraphLaunch(step_graph_, stream_));
}

void CudaExecutor::drop_step_graph() {
  if (step_graph_ == nullptr) return;
  cudaGraphExecDestroy(step_graph_);
  step_graph_ = nullptr;
}

double CudaExecutor::elapsed_ms(size_t from, size_t to) {
  SB_CUDA_CHECK(cudaEventSynchronize(marks_.at(to)));
  float ms = 0;
  SB_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_.at(from), marks_.at(to)));
  return ms;
}

int64_t CudaExecutor::counted_rows(const Node& loss_node) {
  const TensorId targets = loss_node.inputs[1];
  auto it = counted_rows_.find(targets);
  if (it != counted_rows_.end()) return it->second;
  int64_t count = 0;
  SB_CUDA_CHECK(cudaMemcpyAsync(&count, counted(), sizeof count, cudaMemcpyDeviceToHost, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  counted_rows_[targets] = count;
  return count;
}

// Whether the loss is scaled; UsageError for a config that cannot scale.
bool CudaExecutor::scales_loss(const Graph& graph, const LossScaleConfig& config) {
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

void CudaExecutor::start_loss_scaling() {
  const LossScaleState initial = initial_loss_scale_state(loss_scale_config_);
  SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&loss_scale_), sizeof(LossScaleState)));
  SB_CUDA_CHECK(cudaMemcpyAsync(loss_scale_, &initial, sizeof initial, cudaMemcpyHostToDevice, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// What a step needs beyond the plan, allocated now so that no step can run out of memory halfway (and a batch
// too large fails here, cleanly): the GEMM workspace of this executor's stream, and scratch for the largest
// of its kernels' temporary buffers (bias_backward, layernorm_backward), both lent to the stream.
void CudaExecutor::reserve_outside_plan(const Graph& graph) {
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
// graph builder's budget, src/core/ops/conv2d.cpp), in the dtype of its output.
void CudaExecutor::choose_conv_algorithms(bool tf32) {
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

// The optimizer's state buffers, for its shard (every parameter unless set_optimizer_shard), allocated and zeroed
// on first use or when the optimizer or the shard's size changes.
void CudaExecutor::ensure_optimizer_state(const OptimizerSettings& settings) {
  const size_t state_bytes =
      cpu::optimizer_state_bytes(optimizer_state_buffers(settings.kind), optimizer_shard_count());
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

uint64_t cuda_outside_plan_bytes(const Graph& graph) {
  return cuda::gemm_workspace_bytes() + kernel_scratch_bytes(graph);
}

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms,
                                             const LossScaleConfig& loss_scale, const ArenaMemory& arena) {
  return std::make_unique<CudaExecutor>(graph, plan, tf32_gemms, loss_scale, arena);
}

}  // namespace sb
