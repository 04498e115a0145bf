// CPU reference of weight normalisation (sb::cpu), torch.nn.utils.weight_norm as fairseq's ConvS2S uses it on
// every Linear (dim 0: one norm per output row) and ConvTBC (dim 2: one norm per output channel over kernel
// taps and input channels). Stored output-channel first, as nn.Linear's (out, in) and conv2d's (K, 1, k, C)
// weights are here, both are one norm per row of v viewed as (rows, cols):
//   w[r, :] = g[r] · v[r, :] / ||v[r, :]||.
// The CUDA device has the same names (src/cuda/weight_norm.h). Tests: tests/unit/test_cpu_convs2s_ops.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// v (rows, cols), g (rows) -> w (rows, cols) and norms (rows) = ||v[r, :]|| (kept for the backward pass).
// Sums of squares in double; a zero row gives inf/NaN as PyTorch does (fairseq's initialisation never has one).
void weight_norm_forward(const float* v, const float* g, float* w, float* norms, int64_t rows, int64_t cols);

// From dw (rows, cols), with n = norms[r] and d = sum_c dw[r, c] · v[r, c] (in double):
//   dg[r] = d / n,   dv[r, c] = (g[r] / n) · (dw[r, c] − v[r, c] · dg[r] / n).
// Overwrites dv and dg.
void weight_norm_backward(const float* dw, const float* v, const float* g, const float* norms, float* dv,
                          float* dg, int64_t rows, int64_t cols);

}  // namespace sb::cpu
