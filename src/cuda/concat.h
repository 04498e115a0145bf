// Channel concatenation and split on the GPU: the same arguments as src/cpu/concat.h plus a stream; device
// pointers, T = float, bf16 or fp16, at most kMaxConcatParts parts. One thread per element of the
// concatenated tensor; bit-exact copies. Tests: tests/gpu/test_cuda_upsample_concat.cpp (suite CudaConcat).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "src/cuda/element.h"

namespace sb::cuda {

constexpr int kMaxConcatParts = 16;

template <typename T>
void concat_last(const std::vector<const T*>& parts, const std::vector<int64_t>& widths, T* y, int64_t rows,
                 cudaStream_t stream);
template <typename T>
void split_last(const T* x, const std::vector<T*>& parts, const std::vector<int64_t>& widths, int64_t rows,
                cudaStream_t stream);

}  // namespace sb::cuda
