// Element-type conversion on the GPU (sb::cuda), between the types of src/cuda/element.h: the boundary of a
// bf16 or fp16 region (fp32 master weights cast for a half-precision forward pass, a gradient widened for fp32
// reductions). fp32 -> bf16 / fp16 rounds to nearest even (__float2bfloat16_rn, __float2half_rn: overflow
// goes to inf, NaN stays NaN); back to fp32 is exact. Finite values and infinities match the host's
// float_to_{bf16,fp16}_bits / *_bits_to_float (include/scalebench/half_precision.h) bit for bit.
// Tests: gpu_tests --gtest_filter='CudaBf16Cast*:CudaFp16Cast*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// y[i] = x[i] converted to To, for i < n; device pointers, y may not overlap x. Instantiated for
// (From, To) = (float, bf16), (bf16, float), (float, fp16) and (fp16, float). n < 0 throws UsageError; n == 0
// launches nothing.
template <typename From, typename To>
void cast(const From* x, To* y, int64_t n, cudaStream_t stream);

}  // namespace sb::cuda
