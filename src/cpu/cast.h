// CPU reference casts between fp32 and the 16-bit float types (sb::cpu), element by element through
// include/scalebench/half_precision.h: round to nearest even, NaN stays NaN, overflow goes to inf, so
// results equal the CUDA __float2bfloat16_rn / __float2half_rn bit for bit. Tests:
// tests/unit/test_cpu_cast.cpp (suite CpuCast).
#pragma once

#include <cstdint>

namespace sb::cpu {

// 16-bit values travel as their bit patterns (uint16_t), as in mixed-precision buffers. n < 0 throws
// UsageError. Widening (bits -> float) is exact.
void cast_float_to_bf16(const float* x, uint16_t* y, int64_t n);
void cast_bf16_to_float(const uint16_t* x, float* y, int64_t n);
void cast_float_to_fp16(const float* x, uint16_t* y, int64_t n);
void cast_fp16_to_float(const uint16_t* x, float* y, int64_t n);

}  // namespace sb::cpu
