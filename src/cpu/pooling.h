// Max and average pooling over NHWC windows, CPU reference (sb::cuda::*_pool2d_* take the same arguments plus
// a stream). The window geometry is a depthwise Conv2dGeometry (src/core/ops/conv2d.h: in_c = out_c =
// groups = C, dilation 1) with per-side padding: max pooling treats padding as -inf (never chosen; every
// window must hold an input pixel), average pooling as zeros, dividing by the window size
// (count_include_pad = true; a window of padding only is 0) or by the input pixels inside it (false, NASNet's
// avg 3 x 3). A negative padding crops that side, as a negative side of ZeroPad2d does: NASNet's factorized
// reduction reads its input shifted by one pixel (ZeroPad2d((0, 1, 0, 1)), crop [1:, 1:], 1 x 1 stride 2),
// which is the padding (top -1, bottom +1) of a 1 x 1 stride-2 average that counts the padding. A global average
// pool is an average pool whose window is the whole image. Backward passes are scatters here (the CUDA kernels
// gather, so the two formulations check each other). Tests: tests/unit/test_cpu_pooling.cpp (CpuPooling).
#pragma once

#include <cstdint>

#include "src/core/ops/conv2d.h"
#include "src/core/ops/pooling.h"

namespace sb::cpu {

// y (N, Ho, Wo, C); argmax (N, Ho, Wo, C): the chosen input pixel as ih · W + iw (the first maximum in
// row-major window order), saved for the backward pass.
void max_pool2d_forward(const float* x, float* y, int32_t* argmax, const Conv2dGeometry& g);
// dx (N, H, W, C) = dy routed to each window's argmax, summed where windows overlap; overwritten.
void max_pool2d_backward(const float* dy, const int32_t* argmax, float* dx, const Conv2dGeometry& g);

void avg_pool2d_forward(const float* x, float* y, const Conv2dGeometry& g, bool count_include_pad);
void avg_pool2d_backward(const float* dy, float* dx, const Conv2dGeometry& g, bool count_include_pad);

// The geometry check lives with the pooling family (src/core/ops/pooling.h), where the graph builder uses it.
using sb::check_pool_geometry;

}  // namespace sb::cpu
