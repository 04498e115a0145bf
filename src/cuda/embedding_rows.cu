// The embedding-rows kernels (embedding_rows.h). mark: a thread per token. compact: one block of 1024 threads,
// each owning a contiguous stretch of the flags, their counts prefix-summed with cub::BlockScan, so the rows come
// out ascending with no sort (vocab is at most a few times 10^5: one block reads it in microseconds). gather and
// scatter_add: a block per packed row, float4 accesses when dim allows.
#include <cub/block/block_scan.cuh>

#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/embedding_rows.h"

namespace sb::cuda {
namespace {

constexpr int kCompactThreads = 1024;
constexpr int kRowThreads = 128;

__global__ void mark_kernel(const int32_t* __restrict__ ids, int64_t tokens, int32_t* __restrict__ flags,
                            int64_t vocab, int64_t padding_idx) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= tokens) return;
  const int32_t id = ids[t];
  if (id >= 0 && id < vocab && id != padding_idx) flags[id] = 1;  // every writer stores the same 1: no atomic
}

__global__ void compact_kernel(const int32_t* __restrict__ flags, int32_t* __restrict__ rows, int64_t vocab) {
  using Scan = cub::BlockScan<int32_t, kCompactThreads>;
  __shared__ typename Scan::TempStorage scan;
  const int64_t stretch = (vocab + kCompactThreads - 1) / kCompactThreads;
  const int64_t begin = threadIdx.x * stretch;
  const int64_t end = begin + stretch < vocab ? begin + stretch : vocab;
  int32_t mine = 0;
  for (int64_t v = begin; v < end; ++v) mine += flags[v] > 0 ? 1 : 0;
  int32_t at = 0, total = 0;
  Scan(scan).ExclusiveSum(mine, at, total);
  for (int64_t v = begin; v < end; ++v) {
    if (flags[v] > 0) rows[at++] = static_cast<int32_t>(v);
  }
  for (int64_t i = total + threadIdx.x; i < vocab; i += kCompactThreads) rows[i] = -1;
}

template <int W>
__global__ void gather_kernel(const float* __restrict__ late, const int32_t* __restrict__ rows,
                              float* __restrict__ packed, int64_t dim) {
  using P = float4;
  const int64_t i = blockIdx.x;
  const int32_t row = rows[i];
  float* out = packed + i * dim;
  if (W == 4) {
    P* dst = reinterpret_cast<P*>(out);
    const P* src = reinterpret_cast<const P*>(late + static_cast<int64_t>(row) * dim);
    for (int64_t c = threadIdx.x; c < dim / 4; c += blockDim.x) dst[c] = row < 0 ? make_float4(0, 0, 0, 0) : src[c];
  } else {
    const float* src = late + static_cast<int64_t>(row) * dim;
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) out[c] = row < 0 ? 0.0f : src[c];
  }
}

template <int W>
__global__ void scatter_add_kernel(const float* __restrict__ packed, const int32_t* __restrict__ rows, float* grad,
                                   int64_t dim) {
  const int64_t i = blockIdx.x;
  const int32_t row = rows[i];
  if (row < 0) return;
  const float* add = packed + i * dim;
  float* out = grad + static_cast<int64_t>(row) * dim;
  if (W == 4) {
    const float4* a = reinterpret_cast<const float4*>(add);
    float4* o = reinterpret_cast<float4*>(out);
    for (int64_t c = threadIdx.x; c < dim / 4; c += blockDim.x) {
      float4 v = o[c];
      const float4 d = a[c];
      v.x += d.x;
      v.y += d.y;
      v.z += d.z;
      v.w += d.w;
      o[c] = v;
    }
  } else {
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) out[c] += add[c];
  }
}

bool vectorizable(int64_t dim, const void* a, const void* b) {
  return dim % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

void check_sizes(const char* op, int64_t vocab, int64_t dim) {
  SB_CHECK(vocab > 0 && dim > 0 && vocab < (int64_t{1} << 31),
           std::string(op) + ": 0 < vocab < 2^31 and dim > 0 required");
}

}  // namespace

void embedding_rows_mark(const int32_t* ids, int64_t tokens, int32_t* flags, int64_t vocab, int64_t padding_idx,
                         cudaStream_t stream) {
  check_sizes("embedding_rows_mark", vocab, 1);
  if (tokens <= 0) return;
  const int threads = 256;
  mark_kernel<<<static_cast<unsigned>((tokens + threads - 1) / threads), threads, 0, stream>>>(ids, tokens, flags,
                                                                                              vocab, padding_idx);
  SB_CUDA_CHECK(cudaGetLastError());
}

void embedding_rows_compact(const int32_t* flags, int32_t* rows, int64_t vocab, cudaStream_t stream) {
  check_sizes("embedding_rows_compact", vocab, 1);
  compact_kernel<<<1, kCompactThreads, 0, stream>>>(flags, rows, vocab);
  SB_CUDA_CHECK(cudaGetLastError());
}

void embedding_rows_gather(const float* late, const int32_t* rows, float* packed, int64_t vocab, int64_t dim,
                           cudaStream_t stream) {
  check_sizes("embedding_rows_gather", vocab, dim);
  if (vectorizable(dim, late, packed)) {
    gather_kernel<4><<<static_cast<unsigned>(vocab), kRowThreads, 0, stream>>>(late, rows, packed, dim);
  } else {
    gather_kernel<1><<<static_cast<unsigned>(vocab), kRowThreads, 0, stream>>>(late, rows, packed, dim);
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

void embedding_rows_scatter_add(const float* dense, const float* packed, const int32_t* rows, float* grad,
                                int64_t vocab, int64_t dim, cudaStream_t stream) {
  check_sizes("embedding_rows_scatter_add", vocab, dim);
  if (dense != grad) {
    SB_CUDA_CHECK(cudaMemcpyAsync(grad, dense, sizeof(float) * static_cast<size_t>(vocab * dim),
                                  cudaMemcpyDeviceToDevice, stream));
  }
  if (vectorizable(dim, packed, grad)) {
    scatter_add_kernel<4><<<static_cast<unsigned>(vocab), kRowThreads, 0, stream>>>(packed, rows, grad, dim);
  } else {
    scatter_add_kernel<1><<<static_cast<unsigned>(vocab), kRowThreads, 0, stream>>>(packed, rows, grad, dim);
  }
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sb::cuda

// The embedding-rows family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_embedding_rows_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"embedding_rows_mark",
       [](CudaExecutor& e, const Node& n) {
         const int64_t vocab = size_attr(n, "vocab");
         SB_CUDA_CHECK(cudaMemsetAsync(e.u8(n.outputs[0]), 0, sizeof(int32_t) * vocab, e.stream()));
         for (TensorId ids : n.inputs) {
           cuda::embedding_rows_mark(e.at<int32_t>(ids), e.graph().tensor(ids).elements(), e.at<int32_t>(n.outputs[0]),
                                     vocab, size_attr(n, "padding_idx"), e.stream());
         }
       }},
      {"embedding_rows_compact",
       [](CudaExecutor& e, const Node& n) {
         cuda::embedding_rows_compact(e.at<int32_t>(n.inputs[0]), e.at<int32_t>(n.outputs[0]), size_attr(n, "vocab"),
                                      e.stream());
       }},
      {"embedding_rows_gather",
       [](CudaExecutor& e, const Node& n) {
         cuda::embedding_rows_gather(e.at<float>(n.inputs[0]), e.at<int32_t>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                     size_attr(n, "vocab"), size_attr(n, "dim"), e.stream());
       }},
      {"embedding_rows_scatter_add",
       [](CudaExecutor& e, const Node& n) {
         cuda::embedding_rows_scatter_add(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                          e.at<int32_t>(n.inputs[2]), e.at<float>(n.outputs[0]), size_attr(n, "vocab"),
                                          size_attr(n, "dim"), e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
