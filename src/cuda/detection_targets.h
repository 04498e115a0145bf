// CUDA target assignment of Mask R-CNN (sb::cuda): the same names and arguments as src/cpu/detection_targets.h
// plus the stream; device pointers. The same draws as the CPU (detection::random_bits), the same order (sort keys
// (category, random bits, index), all distinct), so the same anchors, RoIs and masks; regression targets may
// differ from the CPU's in an ulp (logf). Anchor sampling sorts every image's anchors with a CUB segmented radix
// sort; RoI sampling sorts each image's proposals + boxes in one block (bitonic, shared memory). Scratch from the
// stream's lender (*_scratch_bytes, reserved by the executor). The sampling step is a StepValue
// (src/cuda/step_value.h), resolved on the device so that a step replayed from a CUDA graph samples afresh:
// cuda::eager_value(step) is the CPU's `step`. Tests: tests/gpu/test_cuda_detection_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/cpu/detection_targets.h"
#include "src/cuda/step_value.h"

namespace sb::cuda {

size_t rpn_targets_scratch_bytes(const cpu::RpnTargetGeometry& g);
void rpn_targets(const float* anchors, const float* gt_boxes, const int32_t* sample_ids, StepValue step,
                 const cpu::RpnTargetGeometry& g, float* labels, float* label_weights, float* box_targets,
                 float* box_weights, cudaStream_t stream);

size_t roi_sample_scratch_bytes(const cpu::RoiSampleGeometry& g);
void roi_sample(const float* proposals, const float* gt_boxes, const int32_t* gt_classes, const int32_t* sample_ids,
                StepValue step, const cpu::RoiSampleGeometry& g, const cpu::RoiSampleOutputs& out, cudaStream_t stream);

void mask_targets(const float* mask_rois, const int32_t* mask_boxes, const float* mask_weights, const float* gt_boxes,
                  int64_t rois, int64_t boxes, int64_t resolution, float* targets, float* weights, cudaStream_t stream);

}  // namespace sb::cuda
