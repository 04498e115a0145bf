// Nearest and bilinear resizing of NHWC images, CPU reference (sb::cuda::upsample_* take the same arguments
// plus a stream). As torch.nn.functional.interpolate: nearest reads source row floor(o · in / out) (YOLOv3's
// ×2 upsample); bilinear reads the two source rows and columns around
//   src = align_corners ? o · (in - 1) / (out - 1) : max((o + 0.5) · in / out - 0.5, 0)
// (torchvision's DeepLabv3 uses align_corners = false; TF's DeepLab true) with weights 1 - frac and frac, the
// second index clamped to in - 1. Backward passes are scatter-adds here (the CUDA kernels gather).
// Tests: tests/unit/test_cpu_upsample.cpp (suite CpuUpsample).
#pragma once

#include <cstdint>

#include "src/core/ops/upsample.h"

namespace sb::cpu {

using sb::ResizeGeometry;  // the family's extents (src/core/ops/upsample.h)

void upsample_nearest_forward(const float* x, float* y, const ResizeGeometry& g);
void upsample_nearest_backward(const float* dy, float* dx, const ResizeGeometry& g);
void upsample_bilinear_forward(const float* x, float* y, const ResizeGeometry& g, bool align_corners);
void upsample_bilinear_backward(const float* dy, float* dx, const ResizeGeometry& g, bool align_corners);

// The source taps of output index o along one axis: rows i0, i1 with weights w0, w1 (i0 == i1 at the edge).
// Shared with the CUDA kernels' host-side tests; the device evaluates the same formula in fp32.
struct LinearTaps {
  int64_t i0, i1;
  double w0, w1;
};
LinearTaps bilinear_taps(int64_t o, int64_t in, int64_t out, bool align_corners);

}  // namespace sb::cpu
