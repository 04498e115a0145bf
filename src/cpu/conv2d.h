// 2-D convolution in NHWC, CPU reference (sb::cuda::Conv2dRunner runs the same three passes through cuDNN).
// Plain loops over the geometry of src/core/ops/conv2d.h, sums in double, one rounding to fp32: k x k,
// 1 x 1, strided, dilated (atrous), grouped and depthwise (groups = C) convolutions with per-side zero padding.
// Cross-correlation as PyTorch / cuDNN (no kernel flip). The bias is not part of these: it is the bias ops'
// column add and column sum (src/cpu/bias.h) over the (N·Ho·Wo, K) view of y.
// Tests: tests/unit/test_cpu_conv2d.cpp (suite CpuConv2d), tests/unit/test_engine_conv2d.cpp.
#pragma once

#include "src/core/ops/conv2d.h"

namespace sb::cpu {

// y (N, Ho, Wo, K) = x (N, H, W, C) ⋆ w (K, R, S, C/groups); y is overwritten.
void conv2d_forward(const float* x, const float* w, float* y, const Conv2dGeometry& g);
// dx (N, H, W, C) = the adjoint of the forward map in x applied to dy (N, Ho, Wo, K); overwritten.
void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dGeometry& g);
// dw (K, R, S, C/groups) = sum over n, ho, wo of dy · x at the tap's input position; overwritten.
void conv2d_backward_filter(const float* x, const float* dy, float* dw, const Conv2dGeometry& g);

// The geometry check lives with the conv2d family (src/core/ops/conv2d.h), where the graph builder uses it.
using sb::check_conv2d_geometry;

}  // namespace sb::cpu
