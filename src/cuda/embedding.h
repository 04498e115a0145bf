// Embedding lookup (gather) and its gradient (scatter-add) on the GPU: the same arguments as
// sb::cpu::embedding_* (src/cpu/embedding.h) plus a stream; ids, table, out, dout and dtable are device pointers.
// The table and its gradient are fp32 parameters; the activations out / dout are T = float, bf16 or fp16
// (src/cuda/element.h): the forward pass rounds the table row once to T (a copy for float), the backward
// pass widens dout to fp32 before adding it into dtable.
// Ids are validated on the host when the synthetic data is generated (the CPU reference dies on a bad id);
// checking them here would need a device-to-host round trip per call. The kernels still never touch memory
// outside the table: an id outside [0, vocab) makes the forward row NaN (so the loss turns NaN and the
// run's checks see it, rather than training on a silent wrong row) and is skipped by the backward pass.
// Tests: gpu_tests --gtest_filter='CudaEmbedding*:CudaBf16Embedding*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cpu/embedding.h"  // sb::cpu::kNoPaddingIdx, the same value on every device
#include "src/cuda/element.h"

namespace sb::cuda {

using sb::cpu::kNoPaddingIdx;

// ids: (tokens); table: (vocab, dim); out: (tokens, dim), out[t] = table[ids[t]].
template <typename T>
void embedding_forward(const int32_t* ids, const float* table, T* out, int64_t tokens, int64_t dim, int64_t vocab,
                       cudaStream_t stream);

// dtable[ids[t]] += dout[t] for every token (dtable is not cleared), except ids equal to padding_idx.
// Float atomicAdd: repeated ids sum in an order that varies run to run, so the last bits of a row hit many
// times are not reproducible (the CPU sums them in fp64 and rounds once). A table of at most 48 KiB (token types)
// is summed per block of 32 tokens in shared memory first, then added once per block.
template <typename T>
void embedding_backward_accumulate(const int32_t* ids, const T* dout, float* dtable, int64_t tokens, int64_t dim,
                                   int64_t vocab, int64_t padding_idx, cudaStream_t stream);

}  // namespace sb::cuda
