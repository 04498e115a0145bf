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

namespace sb::cpu {

constexpr int kMaxAnchorLevels = 5;
constexpr int kAnchorsPerCell = 3;  // aspect ratios 0.5, 1, 2 (height / width)

struct AnchorLevel {
  int64_t height = 0, width = 0;      // feature map cells
  int64_t stride_h = 0, stride_w = 0;  // image pixels per cell (image size // map size)
  float size = 0;                      // anchor side at aspect ratio 1, pixels (32 ... 512)
  int64_t anchors() const { return height * width * kAnchorsPerCell; }
};

// anchors (sum of levels' anchors, 4) in (level, y, x, ratio) order, the order of an NHWC RPN output with
// 3 anchors per cell: torchvision's base anchors round(+-(w, h) / 2) shifted by the cell's top-left pixel.
void anchor_grid(const AnchorLevel* levels, int count, float* anchors);

struct ProposalGeometry {
  int64_t batch = 0, anchors = 0;  // anchors per image, all levels
  int levels = 0;
  int64_t level_anchors[kMaxAnchorLevels] = {};
  int64_t pre_nms_top_n = 2000, post_nms_top_n = 2000;
  float nms_threshold = 0.7f, min_size = 1e-3f;
  float image_height = 0, image_width = 0;
  bool decode = true;  // false: proposals are the anchors themselves, clipped (the finite-difference form)
  int64_t level_candidates(int l) const { return level_anchors[l] < pre_nms_top_n ? level_anchors[l] : pre_nms_top_n; }
  int64_t candidates() const {
    int64_t n = 0;
    for (int l = 0; l < levels; ++l) n += level_candidates(l);
    return n;
  }
};

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
