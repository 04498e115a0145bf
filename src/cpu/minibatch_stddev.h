// StyleGAN's minibatch standard deviation layer (NVlabs/stylegan networks_stylegan.py minibatch_stddev_layer,
// group size 4, one new feature) in NHWC, CPU reference with sums in double, plus its backward pass and the
// backward pass of that backward pass (the R1 penalty differentiates D's input gradient again).
// Tests: tests/unit/test_cpu_stylegan_ops.cpp (suite CpuMinibatchStddev), tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cstdint>

#include "src/core/ops/minibatch_stddev.h"

namespace sb::cpu {

// The geometry and its check live with the family's graph-builder code (src/core/ops/minibatch_stddev.h).
using sb::MinibatchStddevGeometry;
using sb::check_minibatch_stddev_geometry;

constexpr double kMinibatchStddevEpsilon = 1e-8;

// x (N, H, W, C) -> y (N, H, W, C + 1). Throws UsageError on an inconsistent geometry.
void minibatch_stddev_forward(const float* x, float* y, const MinibatchStddevGeometry& g);
// dx (N, H, W, C) from x and dy (N, H, W, C + 1): dy's first C channels pass through; the statistic's upstream
// T (dy's channel C summed over the group's members and pixels) adds T / (K G) · (x - mean_g) / sigma.
void minibatch_stddev_backward(const float* x, const float* dy, float* dx, const MinibatchStddevGeometry& g);
// The gradients of <u, dx> for dx = minibatch_stddev_backward(x, dy), u (N, H, W, C):
//   d/d dy: u on the first C channels and, on channel C, R = sum_{g,k} u d / sigma / (K G) of the member's group;
//   d/d x:  T / (K G) · [(u - mean_g u) / sigma - d · sum_g(u d) / (G sigma^3)] with d = x - mean_g x.
// dx2 (N, H, W, C) and ddy (N, H, W, C + 1) are overwritten. Linear in u.
void minibatch_stddev_backward_backward(const float* x, const float* dy, const float* u, float* dx2, float* ddy,
                                        const MinibatchStddevGeometry& g);

}  // namespace sb::cpu
