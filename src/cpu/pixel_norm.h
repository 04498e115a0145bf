// StyleGAN's pixel norm (NVlabs/stylegan networks_stylegan.py pixel_norm, epsilon 1e-8): each row of x
// (rows, C) divided by the root mean square of its elements. G_mapping normalises the latents with it. CPU
// reference, sums in double. Tests: tests/unit/test_cpu_stylegan_g_ops.cpp (suite CpuPixelNorm).
#pragma once

#include <cstdint>

namespace sb::cpu {

constexpr double kPixelNormEpsilon = 1e-8;

// y = x · r with r = 1 / sqrt(mean_c x² + eps) per row.
void pixel_norm_forward(const float* x, float* y, int64_t rows, int64_t cols);
// dx = r · dy - r³ · x · (sum_c dy x) / C per row.
void pixel_norm_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t cols);

}  // namespace sb::cpu
