// StyleGAN's minibatch standard deviation layer (NVlabs/stylegan networks_stylegan.py minibatch_stddev_layer,
// group size 4, one new feature) in NHWC, CPU reference with sums in double, plus its backward pass and the
// backward pass of that backward pass (the R1 penalty differentiates D's input gradient again).
// Tests: tests/unit/test_cpu_stylegan_ops.cpp (suite CpuMinibatchStddev), tests/gpu/test_cuda_stylegan_ops.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

// The batch is `splits` contiguous parts of equal size P (one part per data-parallel rank in the --check's
// one-rank reference; 1 otherwise). Within a part, sample p = g·M + m (M = P / group) is member g of group m,
// as the reference's reshape to [group, M, ...] makes it. For each group and each k of the H·W·C positions:
// sigma_k = sqrt(var_g(x) + 1e-8) with the biased variance over the group's members; the group's statistic is
// the mean of sigma_k over k, appended to every member's pixels as channel C.
struct MinibatchStddevGeometry {
  int64_t batch = 0, height = 0, width = 0, channels = 0;
  int64_t group = 4;   // members per group, dividing batch / splits
  int64_t splits = 1;  // contiguous parts grouped separately
  int64_t part() const { return batch / splits; }
  int64_t groups_per_part() const { return part() / group; }
  int64_t positions() const { return height * width * channels; }  // K
};
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

void check_minibatch_stddev_geometry(const MinibatchStddevGeometry& g);

}  // namespace sb::cpu
