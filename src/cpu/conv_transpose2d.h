// Transposed 2-D convolution, CPU reference (sb::cpu; torch.nn.ConvTranspose2d with groups 1, no dilation), NHWC.
// The geometry is that of the conv y -> x whose adjoint this is (src/core/ops/conv2d.h, as the graph
// builder stores it): g.out_* are the transposed conv's input x (N, H, W, C_in = g.out_c), g.in_* its output
// y (N, Ho, Wo, C_out = g.in_c), the weight (C_in, R, S, C_out) that conv's (K, R, S, C). The forward pass is
// written here as its own scatter loop (every input pixel spreads over a kernel window of the output); the
// backward passes are the conv's forward and backward-filter passes (src/cpu/conv2d.h).
// Tests: tests/unit/test_cpu_conv_transpose2d.cpp (suite CpuConvTranspose2d).
#pragma once

#include "src/core/ops/conv2d.h"

namespace sb::cpu {

// y[n, h·s − pad + r, w·s − pad + q, co] += x[n, h, w, ci] · weight[ci, r, q, co] over every tap that lands inside
// y; sums in double, one rounding; y is overwritten. No bias (the bias ops add it).
void conv_transpose2d_forward(const float* x, const float* weight, float* y, const Conv2dGeometry& g);

}  // namespace sb::cpu
