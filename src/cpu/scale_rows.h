// CPU reference of a per-row scaling (sb::cpu): y[r, :] = factors[r] · x[r, :] for x viewed as (rows, cols).
// ConvS2S uses it twice, with data-dependent factors: 0/1 per (sentence, position) to zero the encoder's padded
// time steps (fairseq's masked_fill(encoder_padding_mask)), and sqrt(source length) per sentence, the attention
// output's length scaling. Its backward is the same call on dy. The CUDA device has the same name
// (src/cuda/scale_rows.h). Tests: tests/unit/test_cpu_convs2s_ops.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// In fp32 (one multiplication, one rounding). y may be x.
void scale_rows_forward(const float* x, const float* factors, float* y, int64_t rows, int64_t cols);

}  // namespace sb::cpu
