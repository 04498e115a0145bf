// CUDA blur (sb::cuda): the arguments of src/cpu/blur.h plus the stream; device pointers of T (float, bf16 or fp16). One thread per
// output element, the nine taps summed in fp32 (the CPU sums in double: agreement to ~1e-7 relative).
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaBlur).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

template <typename T>
void blur2d(const T* x, T* y, int64_t batch, int64_t height, int64_t width, int64_t channels,
            cudaStream_t stream);

}  // namespace sb::cuda
