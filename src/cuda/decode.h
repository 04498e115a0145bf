// CUDA greedy-decoding ops (sb::cuda): the same names and arguments as src/cpu/decode.h plus the stream; device
// pointers, the step counter included (read on the device, so a decode loop needs no host round trip per
// token). argmax reads T = float, bf16 or fp16 logits (src/cuda/element.h) and picks what the CPU picks from
// the same values: the first maximum, NaN the largest. Tests: tests/gpu/test_cuda_decode.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// One block per row.
template <typename T>
void argmax_rows(const T* x, int32_t* out, int64_t rows, int64_t cols, cudaStream_t stream);

// element_bytes 1, 2, 4 or 8.
void write_at_counter(const void* src, void* dst, const int32_t* counter, int64_t outer, int64_t time,
                      int64_t inner, int64_t element_bytes, int64_t offset, cudaStream_t stream);

void fill_from_counter(const int32_t* counter, int32_t* out, int64_t n, int64_t offset, cudaStream_t stream);

void update_counter(int32_t* counter, int64_t keep, int64_t add, cudaStream_t stream);

void end_sentences(int32_t* ids, const int32_t* lengths, int64_t rows, int64_t time, int32_t eos, int32_t pad,
                   cudaStream_t stream);

}  // namespace sb::cuda
