// CPU RPN proposal stage (src/cpu/proposals.h).
#include "src/cpu/proposals.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "src/cpu/cpu_bindings.h"
#include "src/cpu/detection_math.h"
#include "src/core/ops/proposals.h"

namespace sb::cpu {

void anchor_grid(const AnchorLevel* levels, int count, float* anchors) {
  const float ratios[kAnchorsPerCell] = {0.5f, 1.0f, 2.0f};
  for (int l = 0; l < count; ++l) {
    const AnchorLevel& level = levels[l];
    float base[kAnchorsPerCell][4];
    for (int a = 0; a < kAnchorsPerCell; ++a) {
      const float h_ratio = std::sqrt(ratios[a]), w_ratio = 1.0f / h_ratio;
      const float ws = w_ratio * level.size, hs = h_ratio * level.size;
      // torch.round: halves to even, as nearbyint in the default rounding mode.
      base[a][0] = std::nearbyint(-ws / 2), base[a][1] = std::nearbyint(-hs / 2);
      base[a][2] = std::nearbyint(ws / 2), base[a][3] = std::nearbyint(hs / 2);
    }
    for (int64_t y = 0; y < level.height; ++y) {
      for (int64_t x = 0; x < level.width; ++x) {
        const auto sx = static_cast<float>(x * level.stride_w), sy = static_cast<float>(y * level.stride_h);
        for (int a = 0; a < kAnchorsPerCell; ++a) {
          anchors[0] = base[a][0] + sx, anchors[1] = base[a][1] + sy;
          anchors[2] = base[a][2] + sx, anchors[3] = base[a][3] + sy;
          anchors += 4;
        }
      }
    }
  }
}

void top_k_per_level(const float* objectness, const ProposalGeometry& g, int32_t* indices) {
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* logits = objectness + n * g.anchors;
    int64_t first = 0;
    for (int l = 0; l < g.levels; ++l) {
      std::vector<int32_t> order(static_cast<size_t>(g.level_anchors[l]));
      std::iota(order.begin(), order.end(), static_cast<int32_t>(first));
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return detection::ordered_bits(logits[a]) > detection::ordered_bits(logits[b]);
      });
      const int64_t k = g.level_candidates(l);
      indices = std::copy(order.begin(), order.begin() + k, indices);
      first += g.level_anchors[l];
    }
  }
}

void nms_bitmask(const float* boxes, int64_t count, float threshold, uint64_t* mask) {
  const int64_t words = nms_mask_words(count);
  std::fill(mask, mask + count * words, uint64_t{0});
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t j = i + 1; j < count; ++j) {
      if (detection::box_iou(boxes + i * 4, boxes + j * 4) > threshold) mask[i * words + j / 64] |= uint64_t{1} << (j % 64);
    }
  }
}

void nms_reduce(const uint64_t* mask, const uint8_t* valid, int64_t count, uint8_t* keep) {
  const int64_t words = nms_mask_words(count);
  std::vector<uint64_t> removed(static_cast<size_t>(words), 0);
  for (int64_t i = 0; i < count; ++i) {
    const bool suppressed = (removed[size_t(i / 64)] >> (i % 64)) & 1;
    keep[i] = !suppressed && (valid == nullptr || valid[i] != 0);
    if (keep[i] == 0) continue;
    for (int64_t w = 0; w < words; ++w) removed[size_t(w)] |= mask[i * words + w];
  }
}

void rpn_proposals(const float* objectness, const float* deltas, const float* anchors, const ProposalGeometry& g,
                   float* proposals, int32_t* source) {
  const int64_t candidates = g.candidates();
  std::vector<int32_t> top(static_cast<size_t>(g.batch * candidates));
  top_k_per_level(objectness, g, top.data());
  const float unit_weights[4] = {1, 1, 1, 1};
  std::vector<float> boxes(static_cast<size_t>(candidates * 4));
  std::vector<uint8_t> valid(static_cast<size_t>(candidates)), keep(static_cast<size_t>(candidates));
  for (int64_t n = 0; n < g.batch; ++n) {
    const int32_t* index = top.data() + n * candidates;
    for (int64_t c = 0; c < candidates; ++c) {
      float* box = &boxes[size_t(c * 4)];
      const float* anchor = anchors + int64_t{index[c]} * 4;
      if (g.decode) {
        detection::decode_box(anchor, deltas + (n * g.anchors + index[c]) * 4, unit_weights, box);
      } else {
        std::copy(anchor, anchor + 4, box);
      }
      detection::clip_box(box, g.image_height, g.image_width);
      valid[size_t(c)] = detection::sub(box[2], box[0]) >= g.min_size && detection::sub(box[3], box[1]) >= g.min_size;
    }
    int64_t first = 0;
    for (int l = 0; l < g.levels; ++l) {
      const int64_t count = g.level_candidates(l);
      std::vector<uint64_t> mask(static_cast<size_t>(count * nms_mask_words(count)));
      nms_bitmask(&boxes[size_t(first * 4)], count, g.nms_threshold, mask.data());
      nms_reduce(mask.data(), &valid[size_t(first)], count, &keep[size_t(first)]);
      first += count;
    }
    // Survivors first, each group by descending logit, ties in candidate order.
    const float* logits = objectness + n * g.anchors;
    auto key = [&](int64_t c) {
      return (uint64_t{keep[size_t(c)]} << 32) | detection::ordered_bits(logits[index[c]]);
    };
    std::vector<int64_t> order(static_cast<size_t>(candidates));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) > key(b); });
    for (int64_t p = 0; p < g.post_nms_top_n; ++p) {
      const int64_t c = order[size_t(p)];
      std::copy(&boxes[size_t(c * 4)], &boxes[size_t(c * 4)] + 4, proposals + (n * g.post_nms_top_n + p) * 4);
      source[n * g.post_nms_top_n + p] = index[c];
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_proposals_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"anchor_grid",
       [](CpuExecutor& e, const Node& n) {
         const std::vector<cpu::AnchorLevel> levels = anchor_levels(n.attributes);
         cpu::anchor_grid(levels.data(), static_cast<int>(levels.size()), e.f32(n.outputs[0]));
       }},
      {"rpn_proposals",
       [](CpuExecutor& e, const Node& n) {
         cpu::rpn_proposals(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), proposal_geometry(n.attributes),
                            e.f32(n.outputs[0]), e.i32(n.outputs[1]));
       }},
  });
}

}  // namespace sb::detail
