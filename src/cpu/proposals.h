// CPU references of the RPN's proposal stage (sb::cpu), torchvision's AnchorGenerator and
// RegionProposalNetwork.filter_proposals with static shapes: anchors of every FPN level, per image and level the
// top pre_nms_top_n anchors by objectness, their decoded and clipped boxes, NMS per level (batched_nms: levels
// never suppress each other), then the post_nms_top_n best survivors across levels by score. The proposal count
// is fixed: when fewer boxes survive NMS, the best suppressed (or too small) ones fill the rest, in score order.
// No gradient flows back (torchvision detaches the proposals). The CUDA device has the same names
// (src/cuda/proposals.h: CUB segmented radix sorts, torchvision-style bitmask NMS). Tests:
// tests/unit/test_cpu_detection_ops.cpp (CpuAnchors, CpuNms, CpuProposals), tests/gpu/test_cuda_detection_ops.cpp.
#pragma once

#include <cstdint>

#include "scalebench/host_device.h"
#include "src/core/ops/proposals.h"

namespace sb::cpu {

// The geometry lives with the family's graph-builder code (src/core/ops/proposals.h).
using sb::AnchorLevel;
using sb::kAnchorsPerCell;
using sb::kMaxAnchorLevels;
using sb::ProposalGeometry;

// anchors (sum of levels' anchors, 4) in (level, y, x, ratio) order, the order of an NHWC RPN output with
// 3 anchors per cell: torchvision's base anchors round(+-(w, h) / 2) shifted by the cell's top-left pixel.
void anchor_grid(const AnchorLevel* levels, int count, float* anchors);

// indices (batch, candidates): per image and level, the anchor indices (into the image's anchors) of the
// level's top level_candidates(l) logits, descending, equal logits in anchor order; levels one after another.
void top_k_per_level(const float* objectness, const ProposalGeometry& g, int32_t* indices);

// Bitmask NMS over `count` boxes sorted by descending score: mask (count, ceil(count / 64)) bit j of row i set
// when j > i and IoU(i, j) > threshold; then the greedy pass keeps a box unless an earlier kept box suppresses
// it. `valid` (count, may be null) boxes that are not valid are neither kept nor suppress anything.
SB_HOST_DEVICE inline int64_t nms_mask_words(int64_t count) { return (count + 63) / 64; }
void nms_bitmask(const float* boxes, int64_t count, float threshold, uint64_t* mask);
void nms_reduce(const uint64_t* mask, const uint8_t* valid, int64_t count, uint8_t* keep);

// The whole stage: objectness (batch, anchors) logits, deltas (batch, anchors, 4), anchors (anchors, 4) ->
// proposals (batch, post_nms_top_n, 4) and source (batch, post_nms_top_n), each proposal's anchor index.
void rpn_proposals(const float* objectness, const float* deltas, const float* anchors, const ProposalGeometry& g,
                   float* proposals, int32_t* source);

}  // namespace sb::cpu
