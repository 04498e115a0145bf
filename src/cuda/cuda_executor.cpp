// The CUDA executor (include/scalebench/executor.h): one cudaMalloc'd arena laid out by the plan, one stream,
// every node dispatched by op name to the sb::cuda kernel with the CPU kernel's arguments. fp32 throughout
// for now, so that it can be compared with the CPU reference element by element.
#include <cuda_runtime_api.h>

#include <functional>
#include <map>

#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/cuda/activations.h"
#include "src/cuda/bias.h"
#include "src/cuda/cross_entropy.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/dropout.h"
#include "src/cuda/embedding.h"
#include "src/cuda/gemm.h"
#include "src/cuda/layernorm.h"
#include "src/cuda/layout.h"
#include "src/cuda/loss_mean.h"
#include "src/cuda/optimizer.h"
#include "src/cuda/select_column.h"
#include "src/cuda/softmax.h"
#include "src/cuda/span_loss.h"

namespace sb {
namespace {

class CudaExecutor;
using Kernel = std::function<void(CudaExecutor&, const Node&)>;
const std::map<std::string, Kernel>& kernels();

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }
float float_attr(const Node& node, const char* name) { return static_cast<float>(node.attributes.at(name)); }

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms)
      : Executor(graph, plan), gemm_math_(tf32_gemms ? cuda::GemmMath::kTf32 : cuda::GemmMath::kFp32) {
    for (const Node& node : graph.nodes()) {
      if (kernels().count(node.op) == 0) throw UsageError("the cuda device has no kernel for op '" + node.op + "'");
    }
    const cudaError_t status = cudaMalloc(&arena_, plan.total_bytes == 0 ? 1 : plan.total_bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw RuntimeFailure("out of GPU memory: the plan needs " + std::to_string(plan.total_bytes) + " bytes");
    }
    SB_CUDA_CHECK(status);
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SB_CUDA_CHECK(cudaMalloc(&scratch_, 64));  // loss sum (float) and counted rows (int64)
  }
  ~CudaExecutor() override {
    cudaStreamSynchronize(stream_);
    cudaFree(scratch_);
    cudaFree(moments_);
    cudaFree(arena_);
    cudaStreamDestroy(stream_);
  }

  void write_tensor(TensorId id, const void* host, size_t bytes) override {
    SB_CUDA_CHECK(cudaMemcpyAsync(u8(id), host, bytes, cudaMemcpyHostToDevice, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    counted_rows_.clear();  // new targets may count differently
  }
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

  void adamw_step(const AdamWSettings& settings, int64_t step) override {
    const size_t n = plan_.parameter_bytes / sizeof(float);
    if (moments_ == nullptr) {
      const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&moments_), 2 * n * sizeof(float) + 1);
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw RuntimeFailure("out of GPU memory for the optimizer's moments (" + std::to_string(2 * n * 4) + " bytes)");
      }
      SB_CUDA_CHECK(status);
      SB_CUDA_CHECK(cudaMemsetAsync(moments_, 0, 2 * n * sizeof(float), stream_));
    }
    cuda::adamw_step(static_cast<float*>(arena_), reinterpret_cast<const float*>(u8_at(plan_.gradient_region_offset)),
                     moments_, moments_ + n, static_cast<int64_t>(n), settings, step, stream_);
  }

  unsigned char* u8_at(uint64_t offset) { return static_cast<unsigned char*>(arena_) + offset; }
  unsigned char* u8(TensorId id) { return static_cast<unsigned char*>(arena_) + plan_.offsets.at(static_cast<size_t>(id)); }
  float* f32(TensorId id) { return reinterpret_cast<float*>(u8(id)); }
  int32_t* i32(TensorId id) { return reinterpret_cast<int32_t*>(u8(id)); }
  cudaStream_t stream() const { return stream_; }
  float* loss_sum() { return static_cast<float*>(scratch_); }
  int64_t* counted() { return reinterpret_cast<int64_t*>(static_cast<char*>(scratch_) + 8); }

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
  void* arena_ = nullptr;
  void* scratch_ = nullptr;
  float* moments_ = nullptr;
  cuda::GemmMath gemm_math_;  // AdamW's first and second moments, back to back
  cudaStream_t stream_ = nullptr;
  std::map<TensorId, int64_t> counted_rows_;
};

void run_gemm(CudaExecutor& e, const Node& n) {
  const bool ta = size_attr(n, "transpose_a") != 0, tb = size_attr(n, "transpose_b") != 0;
  const int64_t m = size_attr(n, "m"), cols = size_attr(n, "n"), k = size_attr(n, "k");
  cuda::gemm_strided_batched(ta, tb, m, cols, k, float_attr(n, "alpha"), e.f32(n.inputs[0]), ta ? m : k,
                             e.f32(n.inputs[1]), tb ? k : cols, 0.0f, e.f32(n.outputs[0]), cols, size_attr(n, "batch"),
                             m * k, k * cols, m * cols, e.stream());
}

void copy(CudaExecutor& e, TensorId to, TensorId from, int64_t floats) {
  SB_CUDA_CHECK(cudaMemcpyAsync(e.f32(to), e.f32(from), sizeof(float) * floats, cudaMemcpyDeviceToDevice, e.stream()));
}

const std::map<std::string, Kernel>& kernels() {
  static const std::map<std::string, Kernel> table = {
      {"gemm", run_gemm},
      {"bias_add",
       [](CudaExecutor& e, const Node& n) {
         const int64_t rows = size_attr(n, "rows"), cols = size_attr(n, "cols");
         copy(e, n.outputs[0], n.inputs[0], rows * cols);
         cuda::bias_add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[1]), rows, cols, e.stream());
       }},
      {"bias_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::bias_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"),
                             e.stream());
       }},
      {"add",
       [](CudaExecutor& e, const Node& n) {
         cuda::add_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"add_n",
       [](CudaExecutor& e, const Node& n) {
         const int64_t count = size_attr(n, "n");
         copy(e, n.outputs[0], n.inputs[0], count);
         for (size_t i = 1; i < n.inputs.size(); ++i) {
           cuda::add_forward(e.f32(n.outputs[0]), e.f32(n.inputs[i]), e.f32(n.outputs[0]), count, e.stream());
         }
       }},
      {"copy", [](CudaExecutor& e, const Node& n) { copy(e, n.outputs[0], n.inputs[0], size_attr(n, "n")); }},
      {"scale",
       [](CudaExecutor& e, const Node& n) {
         cuda::scale_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "factor"),
                             e.stream());
       }},
      {"add_broadcast",
       [](CudaExecutor& e, const Node& n) {
         cuda::add_broadcast_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                     size_attr(n, "repeats"), size_attr(n, "block"), e.stream());
       }},
      {"swap_middle",
       [](CudaExecutor& e, const Node& n) {
         cuda::swap_middle(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "a"), size_attr(n, "b"),
                           size_attr(n, "c"), size_attr(n, "d"), e.stream());
       }},
      {"select_column",
       [](CudaExecutor& e, const Node& n) {
         cuda::select_column_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                     size_attr(n, "cols"), size_attr(n, "column"), e.stream());
       }},
      {"select_column_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::select_column_backward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "rows"),
                                      size_attr(n, "cols"), size_attr(n, "column"), e.stream());
       }},
      {"dropout",
       [](CudaExecutor& e, const Node& n) {
         cuda::dropout_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), e.u8(n.outputs[1]), size_attr(n, "n"),
                               float_attr(n, "p"), e.seed(), e.dropout_offset(n), e.stream());
       }},
      {"dropout_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::dropout_backward(e.f32(n.inputs[0]), e.u8(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                float_attr(n, "p"), e.stream());
       }},
      {"gelu",
       [](CudaExecutor& e, const Node& n) {
         cuda::gelu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"relu",
       [](CudaExecutor& e, const Node& n) {
         cuda::relu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"tanh",
       [](CudaExecutor& e, const Node& n) {
         cuda::tanh_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"gelu_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::gelu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"relu_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::relu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"tanh_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::tanh_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"), e.stream());
       }},
      {"layernorm",
       [](CudaExecutor& e, const Node& n) {
         cuda::layernorm_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                 e.f32(n.outputs[1]), e.f32(n.outputs[2]), size_attr(n, "rows"), size_attr(n, "cols"),
                                 float_attr(n, "epsilon"), e.stream());
       }},
      {"layernorm_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::layernorm_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                                  e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2]),
                                  size_attr(n, "rows"), size_attr(n, "cols"), e.stream());
       }},
      {"embedding",
       [](CudaExecutor& e, const Node& n) {
         cuda::embedding_forward(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "tokens"),
                                 size_attr(n, "dim"), size_attr(n, "vocab"), e.stream());
       }},
      {"embedding_backward",
       [](CudaExecutor& e, const Node& n) {
         const int64_t vocab = size_attr(n, "vocab"), dim = size_attr(n, "dim");
         SB_CUDA_CHECK(cudaMemsetAsync(e.f32(n.outputs[0]), 0, sizeof(float) * vocab * dim, e.stream()));
         cuda::embedding_backward_accumulate(e.i32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                             size_attr(n, "tokens"), dim, vocab, size_attr(n, "padding_idx"), e.stream());
       }},
      {"masked_softmax",
       [](CudaExecutor& e, const Node& n) {
         cuda::masked_softmax_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                      size_attr(n, "heads"), size_attr(n, "q"), size_attr(n, "k"), float_attr(n, "scale"),
                                      n.inputs.size() > 1 ? e.i32(n.inputs[1]) : nullptr, size_attr(n, "causal") != 0,
                                      e.stream());
       }},
      {"masked_softmax_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::masked_softmax_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]),
                                       size_attr(n, "batch"), size_attr(n, "heads"), size_attr(n, "q"),
                                       size_attr(n, "k"), float_attr(n, "scale"),
                                       n.inputs.size() > 2 ? e.i32(n.inputs[2]) : nullptr,
                                       size_attr(n, "causal") != 0, e.stream());
       }},
      {"softmax_cross_entropy",
       [](CudaExecutor& e, const Node& n) {
         cuda::softmax_cross_entropy_forward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.outputs[2]),
                                             e.f32(n.outputs[1]), e.loss_sum(), e.counted(), size_attr(n, "rows"),
                                             size_attr(n, "classes"), float_attr(n, "label_smoothing"),
                                             static_cast<int32_t>(size_attr(n, "ignore_index")), e.stream());
         cuda::loss_mean(e.loss_sum(), e.counted(), e.f32(n.outputs[0]), e.stream());
         e.counted_rows(n);  // first time only: learn the backward's scale
       }},
      {"softmax_cross_entropy_backward",
       [](CudaExecutor& e, const Node& n) {
         const int64_t counted = e.counted_rows(n);
         cuda::softmax_cross_entropy_backward(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.inputs[2]),
                                              e.f32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "classes"),
                                              float_attr(n, "label_smoothing"),
                                              static_cast<int32_t>(size_attr(n, "ignore_index")),
                                              counted > 0 ? 1.0f / static_cast<float>(counted) : 0.0f, e.stream());
       }},
      {"span_loss",  // kept-row counts stay on the device: no host synchronisation, unlike cross-entropy
       [](CudaExecutor& e, const Node& n) {
         cuda::span_loss_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                 e.f32(n.outputs[2]), e.f32(n.outputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                                 size_attr(n, "seq"), e.stream());
       }},
      {"span_loss_backward",  // the loss starts the backward pass: dloss = 1
       [](CudaExecutor& e, const Node& n) {
         cuda::span_loss_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]),
                                  e.f32(n.inputs[4]), e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"),
                                  size_attr(n, "seq"), 1.0f, e.stream());
       }},
  };
  return table;
}

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const MemoryPlan& plan, bool tf32_gemms) {
  return std::make_unique<CudaExecutor>(graph, plan, tf32_gemms);
}

}  // namespace sb
