// The embedding-rows family on the GPU (src/core/ops/embedding_rows.h says what the four ops are for): the same
// arguments as sb::cpu::embedding_rows_* (src/cpu/embedding_rows.h) plus a stream, all device pointers. Every
// result is exact (copies, one fp32 add per element, integer flags), so the GPU matches the CPU bit for bit.
// As in src/cuda/embedding.h, an id outside [0, vocab) is not checked on the device (the host checked the data);
// mark skips it rather than write outside flags. compact writes its count nowhere: the rows after it are -1.
// Tests: gpu_tests --gtest_filter='CudaEmbeddingRows*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void embedding_rows_mark(const int32_t* ids, int64_t tokens, int32_t* flags, int64_t vocab, int64_t padding_idx,
                         cudaStream_t stream);
void embedding_rows_compact(const int32_t* flags, int32_t* rows, int64_t vocab, cudaStream_t stream);
void embedding_rows_gather(const float* late, const int32_t* rows, float* packed, int64_t vocab, int64_t dim,
                           cudaStream_t stream);
void embedding_rows_scatter_add(const float* dense, const float* packed, const int32_t* rows, float* grad,
                                int64_t vocab, int64_t dim, cudaStream_t stream);

}  // namespace sb::cuda
