// Reflection padding, CPU reference (sb::cpu; torch.nn.ReflectionPad2d), NHWC: the border mirrors the image
// without repeating its edge row (padded row −1 is row 1). The CUDA device has the same names
// (src/cuda/reflection_pad.h). Tests: tests/unit/test_cpu_reflection_pad.cpp (suite CpuReflectionPad).
#pragma once

#include <cstdint>

#include "src/core/ops/reflection_pad.h"

namespace sb::cpu {

using ReflectionPadGeometry = sb::ReflectionPadParams;  // the family's params (src/core/ops/reflection_pad.h)

// The source row of padded row i (0 <= i < out extent): i − begin mirrored at 0 and at extent − 1.
inline int64_t reflected_index(int64_t i, int64_t begin, int64_t extent) {
  int64_t v = i - begin;
  if (v < 0) v = -v;
  if (v >= extent) v = 2 * (extent - 1) - v;
  return v;
}

// y (N, Ho, Wo, C) from x (N, H, W, C); throws UsageError for a pad >= the extent it mirrors.
void reflection_pad2d_forward(const float* x, float* y, const ReflectionPadGeometry& g);
// dx (N, H, W, C): every padded position's gradient added to its source pixel (sums in double); overwritten.
void reflection_pad2d_backward(const float* dy, float* dx, const ReflectionPadGeometry& g);

void check_reflection_pad_geometry(const ReflectionPadGeometry& g);

}  // namespace sb::cpu
