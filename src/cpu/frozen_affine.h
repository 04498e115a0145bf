// CPU reference of the frozen affine normalisation (sb::cpu): torchvision's FrozenBatchNorm2d, the BatchNorm of a
// pre-trained detection backbone reduced to a fixed per-channel scale and shift (weight / sqrt(var + eps) and
// bias - mean * scale, computed once from the frozen statistics), optionally fused with the ReLU after it. The
// scale and shift are data (kInput tensors), never trained. The CUDA device has the same names
// (src/cuda/frozen_affine.h). Tests: tests/unit/test_cpu_detection_ops.cpp (suite CpuFrozenAffine).
#pragma once

#include <cstdint>

namespace sb::cpu {

// y (rows, channels) = x · scale[c] + shift[c], then max(·, 0) when `relu`; channels last (NHWC viewed as rows).
void frozen_affine_forward(const float* x, const float* scale, const float* shift, float* y, int64_t rows,
                           int64_t channels, bool relu);

// dx = dy · scale[c], zero where the fused ReLU's output y is not positive. y is read only when `relu`.
void frozen_affine_backward(const float* dy, const float* y, const float* scale, float* dx, int64_t rows,
                            int64_t channels, bool relu);

}  // namespace sb::cpu
