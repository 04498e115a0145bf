// Embedding kernels (embedding.h): one block per token, threads striding the row; float4 copies (16-byte
// loads and stores) when dim % 4 == 0 and the pointers are 16-byte aligned. The backward pass adds with
// float atomicAdd (red.global.add.f32) into the table row.
#include <cmath>
#include <cstdint>
#include <string>

#include "src/cuda/cuda_check.h"
#include "src/cuda/embedding.h"

namespace sb::cuda {
namespace {

constexpr int kMaxThreads = 256;

template <bool kVec4>
__global__ void embedding_forward_kernel(const int32_t* __restrict__ ids, const float* __restrict__ table,
                                         float* __restrict__ out, int64_t dim, int64_t vocab) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  float* o = out + t * dim;
  if (id < 0 || id >= vocab) {  // never read outside the table; make the error visible downstream
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) o[c] = NAN;
    return;
  }
  const float* row = table + static_cast<int64_t>(id) * dim;
  if (kVec4) {
    const float4* src = reinterpret_cast<const float4*>(row);
    float4* dst = reinterpret_cast<float4*>(o);
    for (int64_t i = threadIdx.x; i < dim / 4; i += blockDim.x) dst[i] = src[i];
  } else {
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) o[c] = row[c];
  }
}

template <bool kVec4>
__global__ void embedding_backward_kernel(const int32_t* __restrict__ ids, const float* __restrict__ dout,
                                          float* __restrict__ dtable, int64_t dim, int64_t vocab,
                                          int64_t padding_idx) {
  const int64_t t = blockIdx.x;
  const int32_t id = ids[t];
  if (id < 0 || id >= vocab || id == padding_idx) return;  // never write outside the table
  const float* d = dout + t * dim;
  float* row = dtable + static_cast<int64_t>(id) * dim;
  if (kVec4) {
    const float4* d4 = reinterpret_cast<const float4*>(d);
    for (int64_t i = threadIdx.x; i < dim / 4; i += blockDim.x) {
      const float4 v = d4[i];
      atomicAdd(row + 4 * i, v.x);
      atomicAdd(row + 4 * i + 1, v.y);
      atomicAdd(row + 4 * i + 2, v.z);
      atomicAdd(row + 4 * i + 3, v.w);
    }
  } else {
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) atomicAdd(row + c, d[c]);
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

void embedding_forward(const int32_t* ids, const float* table, float* out, int64_t tokens, int64_t dim,
                       int64_t vocab, cudaStream_t stream) {
  check_shape("embedding_forward", tokens, dim, vocab);
  if (tokens == 0) return;
  SB_CHECK(ids && table && out, "embedding_forward: null pointer");
  const bool vec4 = dim % 4 == 0 && aligned16(table) && aligned16(out);
  const int threads = threads_for(vec4 ? dim / 4 : dim);
  if (vec4) {
    embedding_forward_kernel<true><<<static_cast<unsigned>(tokens), threads, 0, stream>>>(ids, table, out, dim, vocab);
  } else {
    embedding_forward_kernel<false><<<static_cast<unsigned>(tokens), threads, 0, stream>>>(ids, table, out, dim,
                                                                                          vocab);
  }
  SB_CUDA_CHECK_LAUNCH();
}

void embedding_backward_accumulate(const int32_t* ids, const float* dout, float* dtable, int64_t tokens,
                                   int64_t dim, int64_t vocab, int64_t padding_idx, cudaStream_t stream) {
  check_shape("embedding_backward_accumulate", tokens, dim, vocab);
  SB_CHECK(padding_idx == kNoPaddingIdx || (padding_idx >= 0 && padding_idx < vocab),
           "embedding_backward_accumulate: padding_idx " + std::to_string(padding_idx) + " outside [0, " +
               std::to_string(vocab) + ") and not kNoPaddingIdx");
  if (tokens == 0) return;
  SB_CHECK(ids && dout && dtable, "embedding_backward_accumulate: null pointer");
  const bool vec4 = dim % 4 == 0 && aligned16(dout);
  const int threads = threads_for(vec4 ? dim / 4 : dim);
  if (vec4) {
    embedding_backward_kernel<true><<<static_cast<unsigned>(tokens), threads, 0, stream>>>(ids, dout, dtable, dim,
                                                                                          vocab, padding_idx);
  } else {
    embedding_backward_kernel<false><<<static_cast<unsigned>(tokens), threads, 0, stream>>>(ids, dout, dtable, dim,
                                                                                           vocab, padding_idx);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
