// CUDA fused up/down-sampling weights (sb::cuda): the arguments of src/cpu/fused_conv_weight.h plus the
// stream; fp32 device pointers. One thread per output tap, the four (or one) terms summed in fp32.
// Tests: tests/gpu/test_cuda_stylegan_ops.cpp (suite CudaFusedConvWeight).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void fused_conv_weight_forward(const float* w3, float* w4, int64_t out_channels, int64_t in_channels, float factor,
                               cudaStream_t stream);
void fused_conv_weight_backward(const float* dw4, float* dw3, int64_t out_channels, int64_t in_channels,
                                float factor, cudaStream_t stream);

}  // namespace sb::cuda
