// Embedding kernels (embedding.h): one block per token, threads striding the row; 16-byte accesses of the
// activation (4 floats or 8 bf16, with the matching 16 or 32 bytes of the fp32 table row) when dim is a
// multiple of that width and the pointers are 16-byte aligned. The backward pass widens dout to fp32 and adds
// with float atomicAdd (red.global.add.f32) into the table row.
#include <cmath>
#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/embedding.h"

namespace sb::cuda {
namespace {

constexpr int kMaxThreads = 256;


// W: elements per thread step (dim % W == 0; for W > 1 table and out are 16-byte aligned).
template <typename T, int W>
__global__ void embedding_forward_kernel(const int32_t* __restrict__ ids, const float* __restrict__ table,
                                         T* __restrict__ out, int64_t dim, int64_t vocab) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  T* o = out + t * dim;
  if (id < 0 || id >= vocab) {  // never read outside the table; make the error visible downstream
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) o[c] = from_float<T>(NAN);
    return;
  }
  const Pack<float, W>* src = reinterpret_cast<const Pack<float, W>*>(table + static_cast<int64_t>(id) * dim);
  Pack<T, W>* dst = reinterpret_cast<Pack<T, W>*>(o);
  for (int64_t i = threadIdx.x; i < dim / W; i += blockDim.x) {
    const Pack<float, W> v = src[i];
    Pack<T, W> converted;
#pragma unroll
    for (int j = 0; j < W; ++j) converted.element[j] = from_float<T>(v.element[j]);
    dst[i] = converted;
  }
}

// W: elements of dout per thread step (dim % W == 0; for W > 1 dout is 16-byte aligned).
template <typename T, int W>
__global__ void embedding_backward_kernel(const int32_t* __restrict__ ids, const T* __restrict__ dout,
                                          float* __restrict__ dtable, int64_t dim, int64_t vocab,
                                          int64_t padding_idx) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  if (id < 0 || id >= vocab || id == padding_idx) return;  // never write outside the table
  const Pack<T, W>* d = reinterpret_cast<const Pack<T, W>*>(dout + t * dim);
  float* row = dtable + static_cast<int64_t>(id) * dim;
  for (int64_t i = threadIdx.x; i < dim / W; i += blockDim.x) {
    const Pack<T, W> v = d[i];
#pragma unroll
    for (int j = 0; j < W; ++j) atomicAdd(row + W * i + j, to_float(v.element[j]));
  }
}

// A table of a few rows (BERT's 2 token types): every token adds into one of them, so the per-token kernel's
// atomics all collide on the same few addresses (0.81 ms for 16,384 tokens into 2 x 768 on an H200, the last node
// of bert_base's backward pass). Here a block first sums a stretch of tokens into a copy of the table in shared
// memory -- each thread owns columns, so the block's adds never race -- and adds that partial table once.
constexpr int64_t kFewRowsSharedBytes = 48 << 10;
constexpr int64_t kFewRowsTokensPerBlock = 32;

template <typename T>
__global__ void embedding_backward_few_rows_kernel(const int32_t* __restrict__ ids, const T* __restrict__ dout,
                                                   float* __restrict__ dtable, int64_t tokens, int64_t dim,
                                                   int64_t vocab, int64_t padding_idx) {
  extern __shared__ float partial[];
  const int64_t cells = vocab * dim;
  for (int64_t i = threadIdx.x; i < cells; i += blockDim.x) partial[i] = 0.0f;
  __syncthreads();
  const int64_t begin = blockIdx.x * kFewRowsTokensPerBlock;
  const int64_t end = begin + kFewRowsTokensPerBlock < tokens ? begin + kFewRowsTokensPerBlock : tokens;
  for (int64_t t = begin; t < end; ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= vocab || id == padding_idx) continue;  // never write outside the table
    const T* d = dout + t * dim;
    float* row = partial + static_cast<int64_t>(id) * dim;
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) row[c] += to_float(d[c]);
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < cells; i += blockDim.x) {
    if (partial[i] != 0.0f) atomicAdd(dtable + i, partial[i]);  // rows no token of this block hit stay as they are
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

int threads_for(int64_t work) {
  const int64_t threads = (work + 31) / 32 * 32;
  return static_cast<int>(threads < kMaxThreads ? (threads < 32 ? 32 : threads) : kMaxThreads);
}

void check_shape(const char* op, int64_t tokens, int64_t dim, int64_t vocab) {
  SB_CHECK(tokens >= 0 && dim > 0 && vocab > 0, std::string(op) + ": tokens >= 0, dim > 0 and vocab > 0 required");
  SB_CHECK(tokens <= INT32_MAX, std::string(op) + ": tokens must fit a 1-D grid (<= 2^31 - 1)");
}

}  // namespace

template <typename T>
void embedding_forward(const int32_t* ids, const float* table, T* out, int64_t tokens, int64_t dim, int64_t vocab,
                       cudaStream_t stream) {
  check_shape("embedding_forward", tokens, dim, vocab);
  if (tokens == 0) return;
  SB_CHECK(ids && table && out, "embedding_forward: null pointer");
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const bool vector = dim % kWidth == 0 && aligned16(table) && aligned16(out);
  const int threads = threads_for(vector ? dim / kWidth : dim);
  const unsigned grid = static_cast<unsigned>(tokens);
  if (vector) {
    embedding_forward_kernel<T, kWidth><<<grid, threads, 0, stream>>>(ids, table, out, dim, vocab);
  } else {
    embedding_forward_kernel<T, 1><<<grid, threads, 0, stream>>>(ids, table, out, dim, vocab);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void embedding_backward_accumulate(const int32_t* ids, const T* dout, float* dtable, int64_t tokens, int64_t dim,
                                   int64_t vocab, int64_t padding_idx, cudaStream_t stream) {
  check_shape("embedding_backward_accumulate", tokens, dim, vocab);
  SB_CHECK(padding_idx == kNoPaddingIdx || (padding_idx >= 0 && padding_idx < vocab),
           "embedding_backward_accumulate: padding_idx " + std::to_string(padding_idx) + " outside [0, " +
               std::to_string(vocab) + ") and not kNoPaddingIdx");
  if (tokens == 0) return;
  SB_CHECK(ids && dout && dtable, "embedding_backward_accumulate: null pointer");
  if (vocab * dim * static_cast<int64_t>(sizeof(float)) <= kFewRowsSharedBytes) {
    const unsigned blocks = static_cast<unsigned>((tokens + kFewRowsTokensPerBlock - 1) / kFewRowsTokensPerBlock);
    embedding_backward_few_rows_kernel<T><<<blocks, threads_for(dim), vocab * dim * sizeof(float), stream>>>(
        ids, dout, dtable, tokens, dim, vocab, padding_idx);
    SB_CUDA_CHECK_LAUNCH();
    return;
  }
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const bool vector = dim % kWidth == 0 && aligned16(dout);
  const int threads = threads_for(vector ? dim / kWidth : dim);
  const unsigned grid = static_cast<unsigned>(tokens);
  if (vector) {
    embedding_backward_kernel<T, kWidth><<<grid, threads, 0, stream>>>(ids, dout, dtable, dim, vocab, padding_idx);
  } else {
    embedding_backward_kernel<T, 1><<<grid, threads, 0, stream>>>(ids, dout, dtable, dim, vocab, padding_idx);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_EMBEDDING(T)                                                                                          \
  template void embedding_forward<T>(const int32_t*, const float*, T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template void embedding_backward_accumulate<T>(const int32_t*, const T*, float*, int64_t, int64_t, int64_t,    \
                                                 int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_EMBEDDING)
#undef SB_EMBEDDING

}  // namespace sb::cuda

// The embedding family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_embedding_cuda(CudaKernelTable& table) {
  add_kernels(table, {
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
  });
}

}  // namespace sb::cuda_binding
