// CUDA fused up/down-sampling weights (sb::cuda): the arguments of src/cpu/fused_conv_weight.h plus the
// stream; device pointers of T (float, or bf16 / fp16: the weight after its cast to the compute dtype). One thread
// per output tap, the four (or one) terms summed in fp32, rounded once.
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaFusedConvWeight).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

template <typename T>
void fused_conv_weight_forward(const T* w3, T* w4, int64_t out_channels, int64_t in_channels, float factor,
                               cudaStream_t stream);
template <typename T>
void fused_conv_weight_backward(const T* dw4, T* dw3, int64_t out_channels, int64_t in_channels,
                                float factor, cudaStream_t stream);

}  // namespace sb::cuda
