// The CPU executor (include/scalebench/executor.h): binds each node's tensors to their planned offsets and
// calls the sb::cpu kernel of the node's op. Sizes come from node attributes set by the graph builder.
#include "scalebench/executor.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <new>

#include "scalebench/error.h"
#include "src/core/ops/op_bindings.h"
#include "src/cpu/activations.h"
#include "src/cpu/bias.h"
#include "src/cpu/cross_entropy.h"
#include "src/cpu/dropout.h"
#include "src/cpu/embedding.h"
#include "src/cpu/gemm.h"
#include "src/cpu/layernorm.h"
#include "src/cpu/layout.h"
#include "src/cpu/optimizer.h"
#include "src/cpu/select_column.h"
#include "src/cpu/softmax.h"
#include "src/cpu/span_loss.h"
#include "src/engine/cpu_kernels_cnn.h"
#include "src/engine/cpu_kernels_convs2s.h"
#include "src/engine/cpu_kernels_decode.h"
#include "src/engine/cpu_kernels_detection.h"
#include "src/engine/cpu_kernels_pix2pixhd.h"
#include "src/engine/cpu_kernels_san.h"
#include "src/engine/cpu_kernels_stylegan.h"

namespace sb {
namespace {

using Kernel = detail::CpuKernel;
using KernelTable = detail::CpuKernelTable;

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }
// The factor a loss's backward seed carries inside a weighted sum of losses (GraphBuilder::add_losses), or 1.
float gradient_weight(const Node& node) {
  auto it = node.attributes.find("gradient_weight");
  return it == node.attributes.end() ? 1.0f : static_cast<float>(it->second);
}

void run_gemm(CpuExecutor& e, const Node& node) {
  const bool ta = size_attr(node, "transpose_a") != 0, tb = size_attr(node, "transpose_b") != 0;
  const int64_t m = size_attr(node, "m"), n = size_attr(node, "n"), k = size_attr(node, "k");
  const int64_t batch = size_attr(node, "batch");
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  cpu::gemm_strided_batched(ta, tb, m, n, k, float_attr(node, "alpha"), e.f32(node.inputs[0]), lda,
                            e.f32(node.inputs[1]), ldb, 0.0f, e.f32(node.outputs[0]), n, batch, m * k, k * n, m * n);
  if (node.inputs.size() > 2) cpu::bias_add_forward(e.f32(node.outputs[0]), e.f32(node.inputs[2]), m * batch, n);
}

// The reason the kernel set is a table: an op missing here is found when the executor is built, not when the
// step reaches it.
const KernelTable& kernels() {
  static const KernelTable table = {
      {"gemm", run_gemm},
      {"bias_backward",
       [](CpuExecutor& e, const Node& node) {
         cpu::bias_backward(e.f32(node.inputs[0]), e.f32(node.outputs[0]), size_attr(node, "rows"),
                            size_attr(node, "cols"));
       }},
      {"add",
       [](CpuExecutor& e, const Node& node) {
         float* out = e.f32(node.outputs[0]);
         const float* b = e.f32(node.inputs[1]);
         const int64_t n = size_attr(node, "n");
         if (node.attributes.count("weight_b") != 0) {  // a weighted sum of losses: a + w b
           cpu::scale_forward(b, out, n, float_attr(node, "weight_b"));
           b = out;
         }
         cpu::add_forward(e.f32(node.inputs[0]), b, out, n);
       }},
      {"add_n",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         float* out = e.f32(node.outputs[0]);
         std::memcpy(out, e.f32(node.inputs[0]), sizeof(float) * n);
         for (size_t i = 1; i < node.inputs.size(); ++i) cpu::add_forward(out, e.f32(node.inputs[i]), out, n);
       }},
      {"view", [](CpuExecutor&, const Node&) {}},  // shares its input's storage (planner.h)
      {"zero_fill",
       [](CpuExecutor& e, const Node& node) {
         std::memset(e.f32(node.outputs[0]), 0, sizeof(float) * size_attr(node, "n"));
       }},
      {"stack",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         for (size_t i = 0; i < node.inputs.size(); ++i) {
           std::memcpy(e.f32(node.outputs[0]) + i * n, e.f32(node.inputs[i]), sizeof(float) * n);
         }
       }},
      {"unstack",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         for (size_t i = 0; i < node.outputs.size(); ++i) {
           std::memcpy(e.f32(node.outputs[i]), e.f32(node.inputs[0]) + i * n, sizeof(float) * n);
         }
       }},
      {"scale",
       [](CpuExecutor& e, const Node& n) {
         cpu::scale_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "factor"));
       }},
      {"add_broadcast",
       [](CpuExecutor& e, const Node& n) {
         cpu::add_broadcast_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                    size_attr(n, "repeats"), size_attr(n, "block"));
       }},
      {"swap_middle",
       [](CpuExecutor& e, const Node& n) {
         cpu::swap_middle(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "a"), size_attr(n, "b"),
                          size_attr(n, "c"), size_attr(n, "d"));
       }},
      {"select_column",
       [](CpuExecutor& e, const Node& n) {
         cpu::select_column_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                    size_attr(n, "cols"), size_attr(n, "column"));
       }},
      {"select_column_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::select_column_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                     size_attr(n, "cols"), size_attr(n, "column"));
       }},
      {"dropout",  // no mask kept: the backward pass is this node's dropout again (backward_rules.cpp)
       [](CpuExecutor& e, const Node& n) {
         cpu::dropout_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), nullptr, size_attr(n, "n"), float_attr(n, "p"),
                              e.seed(), e.dropout_offset(n));
       }},
      {"gelu", [](CpuExecutor& e, const Node& n) { cpu::gelu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n")); }},
      {"relu", [](CpuExecutor& e, const Node& n) { cpu::relu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n")); }},
      {"tanh", [](CpuExecutor& e, const Node& n) { cpu::tanh_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n")); }},
      {"gelu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::gelu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"relu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::relu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"tanh_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::tanh_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"layernorm",
       [](CpuExecutor& e, const Node& n) {
         cpu::layernorm_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                e.f32(n.outputs[1]), e.f32(n.outputs[2]), size_attr(n, "rows"), size_attr(n, "cols"),
                                float_attr(n, "epsilon"));
       }},
      {"layernorm_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::layernorm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                                 e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2]),
                                 size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"embedding",
       [](CpuExecutor& e, const Node& n) {
         cpu::embedding_forward(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "tokens"),
                                size_attr(n, "dim"), size_attr(n, "vocab"));
       }},
      {"embedding_backward",
       [](CpuExecutor& e, const Node& n) {
         const int64_t vocab = size_attr(n, "vocab"), dim = size_attr(n, "dim");
         std::memset(e.f32(n.outputs[0]), 0, sizeof(float) * vocab * dim);
         cpu::embedding_backward_accumulate(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                            size_attr(n, "tokens"), dim, vocab, size_attr(n, "padding_idx"));
       }},
      {"masked_softmax",
       [](CpuExecutor& e, const Node& n) {
         cpu::masked_softmax_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                     size_attr(n, "heads"), size_attr(n, "q"), size_attr(n, "k"),
                                     float_attr(n, "scale"), n.inputs.size() > 1 ? e.i32(n.inputs[1]) : nullptr,
                                     size_attr(n, "causal") != 0);
       }},
      {"masked_softmax_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::masked_softmax_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                      size_attr(n, "batch"), size_attr(n, "heads"), size_attr(n, "q"),
                                      size_attr(n, "k"), float_attr(n, "scale"),
                                      n.inputs.size() > 2 ? e.i32(n.inputs[2]) : nullptr, size_attr(n, "causal") != 0);
       }},
      {"softmax_cross_entropy",
       [](CpuExecutor& e, const Node& n) {
         float sum = 0;
         int64_t counted = 0;
         cpu::softmax_cross_entropy_forward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[2]),
                                            e.f32(n.outputs[1]), &sum, &counted, size_attr(n, "rows"),
                                            size_attr(n, "classes"), float_attr(n, "label_smoothing"),
                                            static_cast<int32_t>(size_attr(n, "ignore_index")));
         *e.f32(n.outputs[0]) = counted > 0 ? sum / static_cast<float>(counted) : 0.0f;  // mean over counted rows
       }},
      {"softmax_cross_entropy_backward",
       [](CpuExecutor& e, const Node& n) {
         const int64_t rows = size_attr(n, "rows");
         const auto ignore = static_cast<int32_t>(size_attr(n, "ignore_index"));
         const int32_t* targets = e.i32(n.inputs[1]);
         int64_t counted = 0;
         for (int64_t r = 0; r < rows; ++r) counted += targets[r] != ignore;
         cpu::softmax_cross_entropy_backward(e.f32(n.inputs[0]), targets, e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                             rows, size_attr(n, "classes"), float_attr(n, "label_smoothing"),
                                             ignore,
                                             counted > 0 ? gradient_weight(n) * e.loss_weight(n.inputs[1]) /
                                                               static_cast<float>(counted)
                                                         : 0.0f);
       }},
      {"span_loss",
       [](CpuExecutor& e, const Node& n) {
         cpu::span_loss_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                e.f32(n.outputs[2]), e.f32(n.outputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                size_attr(n, "seq"));
       }},
      {"span_loss_backward",  // the loss starts the backward pass: dloss = 1 (times its weight in a sum)
       [](CpuExecutor& e, const Node& n) {
         cpu::span_loss_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                 e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"),
                                 size_attr(n, "seq"), gradient_weight(n));
       }},
  };
  return table;
}

// The core table, then the op families kept in their own files. No op is in two tables
// (tests/unit/test_op_catalogue.cpp), so the order decides nothing today.
const std::vector<const KernelTable*>& kernel_tables() {
  static const std::vector<const KernelTable*> chain = {
      &kernels(),
      &detail::san_cpu_kernels(),
      &detail::cnn_cpu_kernels(),
      &detail::convs2s_cpu_kernels(),
      &detail::pix2pixhd_cpu_kernels(),
      &detail::detection_cpu_kernels(),
      &detail::stylegan_cpu_kernels(),
      &detail::decode_cpu_kernels(),
  };
  return chain;
}

const Kernel* find_kernel(const std::string& op) {
  for (const KernelTable* table : kernel_tables()) {
    auto it = table->find(op);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> cpu_kernel_ops() {
  std::vector<std::string> names;
  for (const KernelTable* table : kernel_tables()) {
    for (const auto& entry : *table) names.push_back(entry.first);
  }
  return names;
}

bool has_cpu_kernel(const std::string& op) { return find_kernel(op) != nullptr; }

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

void CpuExecutor::write_tensor(TensorId id, const void* host, size_t bytes) { std::memcpy(u8(id), host, bytes); }
void CpuExecutor::read_tensor(TensorId id, void* host, size_t bytes) { std::memcpy(host, u8(id), bytes); }

void CpuExecutor::ensure_optimizer_state(const OptimizerSettings& settings) {
  const size_t n = plan_.parameter_bytes / sizeof(float);
  const size_t state_size = static_cast<size_t>(optimizer_state_buffers(settings.kind)) *
                            static_cast<size_t>(cpu::optimizer_state_stride(static_cast<int64_t>(n)));
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
  const size_t n = plan_.parameter_bytes / sizeof(float);
  const float* grads = reinterpret_cast<const float*>(arena_.data() + plan_.gradient_region_offset);
  if (settings.max_grad_norm > 0) {
    norm_scratch_.resize(cpu::kGradNormScratchDoubles);
    cpu::grad_norm_squared(grads, static_cast<int64_t>(n), norm_scratch_.data());
  }
  cpu::optimizer_step(reinterpret_cast<float*>(arena_.data()), grads, optimizer_state_.data(),
                      static_cast<int64_t>(n), settings, step,
                      settings.max_grad_norm > 0 ? norm_scratch_.data() : nullptr);
}

void CpuExecutor::optimizer_step_range(const OptimizerSettings& settings, int64_t step, int64_t first,
                                       int64_t count) {
  const auto n = static_cast<int64_t>(plan_.parameter_bytes / sizeof(float));
  if (!steps_in_ranges(settings)) throw UsageError("optimizer_step_range: clipping needs every gradient first");
  if (first < 0 || count < 0 || first + count > n) throw UsageError("optimizer_step_range: range outside the parameters");
  ensure_optimizer_state(settings);
  auto* params = reinterpret_cast<float*>(arena_.data());
  const auto* grads = reinterpret_cast<const float*>(arena_.data() + plan_.gradient_region_offset);
  cpu::optimizer_step(params + first, grads + first, optimizer_state_.data() + first, count, settings, step, nullptr,
                      cpu::optimizer_state_stride(n));
}

void CpuExecutor::mark(size_t index) {
  if (marks_.size() <= index) marks_.resize(index + 1);
  marks_[index] = std::chrono::steady_clock::now();
}

double CpuExecutor::elapsed_ms(size_t from, size_t to) {
  return std::chrono::duration<double, std::milli>(marks_.at(to) - marks_.at(from)).count();
}

void CpuExecutor::run_nodes(size_t begin, size_t end) {
  for (size_t i = begin; i < end && i < graph_.nodes().size(); ++i) {
    const Node& node = graph_.nodes()[i];
    (*find_kernel(node.op))(*this, node);
  }
}

}  // namespace sb
