// CUDA multi-scale RoIAlign (sb::cuda): the same names and arguments as src/cpu/roi_align.h plus the stream;
// device pointers (the level pointer arrays themselves on the host). Features and dy in T = float, bf16 or fp16,
// RoIs fp32; the backward pass writes fp32 level gradients (atomic adds: many RoIs overlap on P2), which a bf16
// graph casts once (src/core/ops/roi_align.cpp). Tests: tests/gpu/test_cuda_detection_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/roi_align.h"
#include "src/cuda/element.h"

namespace sb::cuda {

template <typename T>
void roi_align_forward(const T* const* features, const float* rois, T* y, const cpu::RoiAlignGeometry& g,
                       cudaStream_t stream);

// Overwrites dfeatures[l] (zeroed, then scattered into).
template <typename T>
void roi_align_backward(const T* dy, const float* rois, float* const* dfeatures, const cpu::RoiAlignGeometry& g,
                        cudaStream_t stream);

}  // namespace sb::cuda
