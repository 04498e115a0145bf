// CUDA RPN proposal stage (sb::cuda): the same names and arguments as src/cpu/proposals.h plus the stream; device
// pointers. Top-k per image and level is a CUB segmented radix sort of the logits (as order-preserving uint32 keys,
// stable: equal logits in anchor order, as the CPU's stable sort); NMS is torchvision's bitmask kernel (64 x 64
// tiles, one 64-bit word per box pair of tiles) followed by the greedy pass on the device (one block per image and
// level), and the final order (survivors, then suppressed, by logit) a second segmented sort on 64-bit keys. The
// decisions are the CPU's exactly for equal boxes (src/cpu/detection_math.h); decoded boxes may differ from the
// CPU's in an ulp (expf). Scratch comes from the stream's lender (rpn_proposals_scratch_bytes, reserved by the
// executor), so nothing is allocated in a step. Tests: tests/gpu/test_cuda_detection_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/cpu/proposals.h"

namespace sb::cuda {

// levels: host array; anchors written on the device.
void anchor_grid(const cpu::AnchorLevel* levels, int count, float* anchors, cudaStream_t stream);

size_t top_k_per_level_scratch_bytes(const cpu::ProposalGeometry& g);
void top_k_per_level(const float* objectness, const cpu::ProposalGeometry& g, int32_t* indices, cudaStream_t stream);

void nms_bitmask(const float* boxes, int64_t count, float threshold, uint64_t* mask, cudaStream_t stream);
void nms_reduce(const uint64_t* mask, const uint8_t* valid, int64_t count, uint8_t* keep, cudaStream_t stream);

size_t rpn_proposals_scratch_bytes(const cpu::ProposalGeometry& g);
void rpn_proposals(const float* objectness, const float* deltas, const float* anchors, const cpu::ProposalGeometry& g,
                   float* proposals, int32_t* source, cudaStream_t stream);

}  // namespace sb::cuda
