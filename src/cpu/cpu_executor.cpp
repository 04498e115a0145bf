// The CPU executor (include/scalebench/executor.h): owns the plan's arena and runs each node through the kernel
// its op family binds (src/cpu/cpu_bindings.h; the bindings read the sizes the graph builder stored).
#include "scalebench/executor.h"

#include <chrono>
#include <cstring>
#include <new>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"
#include "src/cpu/optimizer.h"

namespace sb {
namespace {

const detail::CpuKernel* find_kernel(const std::string& op) {
  const detail::CpuKernelTable& table = detail::cpu_kernels();
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

CpuExecutor::CpuExecutor(const Graph& graph, const MemoryPlan& plan) : Executor(graph, plan) {
  for (const TensorInfo& tensor : graph.tensors()) {
    if (dtype_is_floating(tensor.dtype) && tensor.dtype != DType::kFloat32) {
      throw UsageError(std::string("the cpu device is the fp32 reference; tensor '") + tensor.name + "' is " +
                       dtype_name(tensor.dtype) + " (use --precision fp32)");
    }
  }
  for (const Node& node : graph.nodes()) {
    if (find_kernel(node.op) == nullptr) throw UsageError("the cpu device has no kernel for op '" + node.op + "'");
  }
  arena_charge_ = AllocationCharge(plan.total_bytes, "the plan's arena");
  try {
    arena_.resize(plan.total_bytes);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("out of host memory: the plan needs " + std::to_string(plan.total_bytes) + " bytes");
  }
  initialize_state();
}

void CpuExecutor::allocate_gradient_shard(int64_t floats) {
  gradient_shard_charge_ = AllocationCharge();
  gradient_shard_ = {};
  gradient_shard_charge_ = AllocationCharge(static_cast<uint64_t>(floats) * sizeof(float), "the gradient shard");
  gradient_shard_.assign(static_cast<size_t>(floats), 0.0f);
}

void CpuExecutor::allocate_parameter_shard(int64_t floats) {
  parameter_shard_charge_ = AllocationCharge();
  parameter_shard_ = {};
  parameter_shard_charge_ = AllocationCharge(static_cast<uint64_t>(floats) * sizeof(float), "the parameter shard");
  parameter_shard_.assign(static_cast<size_t>(floats), 0.0f);
}

void CpuExecutor::copy_device_bytes(void* to, const void* from, uint64_t bytes) { std::memcpy(to, from, bytes); }
void CpuExecutor::copy_from_host(void* to, const void* host, uint64_t bytes) { std::memcpy(to, host, bytes); }
void CpuExecutor::copy_to_host(void* host, const void* from, uint64_t bytes) { std::memcpy(host, from, bytes); }
void CpuExecutor::zero_block_gaps(size_t block) {
  const GradientBlock& b = plan_.gradient_blocks[block];
  for (const ByteRange& gap : b.gaps) std::memset(arena_.data() + b.offset + gap.offset, 0, gap.bytes);
}

float* CpuExecutor::f32(TensorId id) {
  return reinterpret_cast<float*>(arena_.data() + plan_.offsets.at(static_cast<size_t>(id)));
}
const float* CpuExecutor::f32(TensorId id) const {
  return reinterpret_cast<const float*>(arena_.data() + plan_.offsets.at(static_cast<size_t>(id)));
}
int32_t* CpuExecutor::i32(TensorId id) {
  return reinterpret_cast<int32_t*>(arena_.data() + plan_.offsets.at(static_cast<size_t>(id)));
}
uint8_t* CpuExecutor::u8(TensorId id) { return arena_.data() + plan_.offsets.at(static_cast<size_t>(id)); }

void CpuExecutor::write_tensor(TensorId id, const void* host, size_t bytes) {
  if (!write_parameter(id, host, bytes)) std::memcpy(u8(id), host, bytes);
}
void CpuExecutor::read_tensor(TensorId id, void* host, size_t bytes) {
  if (!read_parameter(id, host, bytes)) std::memcpy(host, u8(id), bytes);
}

// State for the optimizer's shard (every parameter unless set_optimizer_shard says otherwise).
void CpuExecutor::ensure_optimizer_state(const OptimizerSettings& settings) {
  const size_t state_size =
      cpu::optimizer_state_bytes(optimizer_state_buffers(settings.kind), optimizer_shard_count()) / sizeof(float);
  if (optimizer_state_.size() != state_size || state_kind_ != settings.kind) {
    state_charge_ = AllocationCharge();
    optimizer_state_ = {};
    state_charge_ = AllocationCharge(state_size * sizeof(float), "the optimizer's state");
    optimizer_state_.assign(state_size, 0.0f);
    state_kind_ = settings.kind;
  }
}

void CpuExecutor::optimizer_step(const OptimizerSettings& settings, int64_t step) {
  ensure_optimizer_state(settings);
  const std::vector<ShardRange>& shard = optimizer_shard();
  if (settings.max_grad_norm > 0) {
    norm_scratch_.assign(cpu::kGradNormScratchDoubles, 0.0);
    if (plan_.gradients_in_blocks) {  // the gradient shard, packed: one sum
      ensure_gradient_shard();
      cpu::grad_norm_squared(gradient_shard_.data(), optimizer_shard_count(), norm_scratch_.data());
    } else if (norm_across_ranks_) {
      double squares = 0;
      for (const ShardRange& r : shard) {
        cpu::grad_norm_squared(gradients_of(r.first, r.count), r.count, norm_scratch_.data());
        squares += norm_scratch_[0];
      }
      norm_scratch_[0] = squares;
    } else {
      cpu::grad_norm_squared(gradients_of(0, 0), static_cast<int64_t>(plan_.parameter_bytes / sizeof(float)),
                             norm_scratch_.data());
    }
    // The shard's gradients alone are reduced: their squares, summed over the ranks.
    if (norm_across_ranks_) norm_across_ranks_(norm_scratch_.data(), nullptr);
  }
  // The update over the shard, range after range, each with its part of the packed state.
  const int64_t stride = cpu::optimizer_state_stride(optimizer_shard_count());
  int64_t state = 0;
  for (const ShardRange& r : shard) {
    cpu::optimizer_step(parameters_at(r.first, state), gradients_at(r.first, state),
                        optimizer_state_.data() + state, r.count, settings, step,
                        settings.max_grad_norm > 0 ? norm_scratch_.data() : nullptr, stride);
    state += r.count;
  }
}

void CpuExecutor::optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first,
                                       int64_t count) {
  if (!steps_in_ranges(settings)) throw UsageError("optimizer_step_range: clipping needs every gradient first");
  const int64_t state = optimizer_state_offset(first, count);
  ensure_optimizer_state(settings);
  cpu::optimizer_step(parameters_at(first, state), gradients_at(first, state), optimizer_state_.data() + state, count, settings,
                      step, nullptr, cpu::optimizer_state_stride(optimizer_shard_count()));
}

void CpuExecutor::mark(size_t index) {
  if (marks_.size() <= index) marks_.resize(index + 1);
  marks_[index] = std::chrono::steady_clock::now();
}

double CpuExecutor::elapsed_ms(size_t from, size_t to) {
  return std::chrono::duration<double, std::milli>(marks_.at(to) - marks_.at(from)).count();
}

void CpuExecutor::run_nodes(size_t begin, size_t end) {
  ensure_gradient_shard();
  ensure_parameter_shard();
  for (size_t i = begin; i < end && i < graph_.nodes().size(); ++i) {
    const Node& node = graph_.nodes()[i];
    before_node(i);
    (*find_kernel(node.op))(*this, node);
    after_node(i);
  }
}

}  // namespace sb
