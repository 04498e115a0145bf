// CPU reference of instance normalisation without affine parameters (sb::cpu; torch.nn.InstanceNorm2d's
// default, pix2pixHD's and StyleGAN's norm): x (N, H, W, C) NHWC, each (sample, channel) normalised over its
// H·W pixels with the biased variance. Sums in double, one rounding to fp32. The CUDA device has the same names
// (src/cuda/instance_norm.h). Tests: tests/unit/test_cpu_instance_norm.cpp (suite CpuInstanceNorm).
#pragma once

#include <cstdint>

namespace sb::cpu {

// y = (x - mean) · invstd with invstd = 1 / sqrt(var + epsilon); mean and invstd (N, C) are written for the
// backward pass. `pixels` = H·W.
void instance_norm_forward(const float* x, float* y, float* mean, float* invstd, int64_t batch, int64_t pixels,
                           int64_t channels, float epsilon);

// dx = invstd · (dy − mean(dy) − x̂ · mean(dy · x̂)) per (sample, channel), x̂ = (x − mean) · invstd from the saved
// statistics. Overwrites dx.
void instance_norm_backward(const float* dy, const float* x, const float* mean, const float* invstd, float* dx,
                            int64_t batch, int64_t pixels, int64_t channels);

}  // namespace sb::cpu
