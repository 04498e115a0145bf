// CPU reference of multi-scale RoIAlign (sb::cpu), torchvision's MultiScaleRoIAlign as Mask R-CNN's box (7 x 7) and
// mask (14 x 14) poolers use it: each RoI is pooled from one FPN level chosen by its size (LevelMapper, k0 = 4,
// canonical 224), sampling_ratio samples per bin axis, bilinear, averaged; aligned = false there. Features NHWC.
// The CUDA device has the same names (src/cuda/roi_align.h; forward gather, backward atomic scatter-add).
// Tests: tests/unit/test_cpu_detection_ops.cpp (CpuRoiAlign), tests/unit/test_engine_detection_ops.cpp.
#pragma once

#include <cstdint>

#include "src/core/ops/roi_align.h"

namespace sb::cpu {

// The geometry lives with the family's graph-builder code (src/core/ops/roi_align.h).
using sb::kMaxRoiLevels;
using sb::RoiAlignGeometry;

// features[l] (batch, height[l], width[l], channels); rois (rois, 5) = (image index, x1, y1, x2, y2) in image
// pixels; y (rois, output_size, output_size, channels).
void roi_align_forward(const float* const* features, const float* rois, float* y, const RoiAlignGeometry& g);

// dfeatures[l] (overwritten) from dy: each sample's bilinear weights scatter dy / samples back.
void roi_align_backward(const float* dy, const float* rois, float* const* dfeatures, const RoiAlignGeometry& g);

}  // namespace sb::cpu
