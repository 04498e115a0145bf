// CUDA fill (sb::cuda): y[i] = value (rounded to T: float, bf16 or fp16) for n elements, the `fill` node (GraphBuilder::constant, and the unit
// seed of an input gradient). Tests: tests/gpu/test_cuda_stylegan_ops.cpp. And zero_byte_ranges.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

template <typename T>
void fill(T* y, int64_t n, float value, cudaStream_t stream);

// Zeroes `count` byte ranges of `base`: range i is [offsets[i], offsets[i] + bytes[i]), both multiples of 4, the lists
// on the device (the gradient blocks' gaps, CudaExecutor::zero_block_gaps). One launch, a thread block per range.
// Tests: tests/gpu/test_cuda_zero_byte_ranges.cpp.
void zero_byte_ranges(void* base, const uint64_t* offsets, const uint32_t* bytes, size_t count, cudaStream_t stream);

}  // namespace sb::cuda
