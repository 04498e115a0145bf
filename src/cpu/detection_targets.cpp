// CPU target assignment of Mask R-CNN (src/cpu/detection_targets.h).
#include "src/cpu/detection_targets.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "src/cpu/cpu_bindings.h"
#include "src/cpu/detection_math.h"
#include "src/core/ops/detection_targets.h"

namespace sb::cpu {
namespace {

enum Category : uint64_t { kPositive = 0, kNegative = 1, kIgnored = 2 };

// The sampler's order: category, then random bits, then index (all keys distinct).
std::vector<int64_t> sampling_order(const std::vector<uint64_t>& category, int64_t sample, uint64_t step,
                                    uint32_t stream) {
  std::vector<int64_t> order(category.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  auto key = [&](int64_t i) {
    return (category[size_t(i)] << 32) | detection::random_bits(uint64_t(sample), step, uint64_t(i), stream);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
  return order;
}

// The best box of a candidate (first maximum) and its IoU.
std::pair<int64_t, float> best_match(const float* candidate, const float* boxes, int64_t count) {
  int64_t best = 0;
  float best_iou = -1.0f;
  for (int64_t b = 0; b < count; ++b) {
    const float iou = detection::box_iou(candidate, boxes + b * 4);
    if (iou > best_iou) best = b, best_iou = iou;
  }
  return {best, best_iou};
}

}  // namespace

void rpn_targets(const float* anchors, const float* gt_boxes, const int32_t* sample_ids, uint64_t step,
                 const RpnTargetGeometry& g, float* labels, float* label_weights, float* box_targets,
                 float* box_weights) {
  const float unit_weights[4] = {1, 1, 1, 1};
  const int64_t a_count = g.anchors;
  std::fill(labels, labels + g.batch * a_count, 0.0f);
  std::fill(label_weights, label_weights + g.batch * a_count, 0.0f);
  std::fill(box_targets, box_targets + g.batch * a_count * 4, 0.0f);
  std::fill(box_weights, box_weights + g.batch * a_count * 4, 0.0f);
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* boxes = gt_boxes + n * g.boxes * 4;
    std::vector<float> box_best(static_cast<size_t>(g.boxes), 0.0f);  // each box's highest IoU over anchors
    std::vector<int64_t> match(static_cast<size_t>(a_count));
    std::vector<float> match_iou(static_cast<size_t>(a_count));
    for (int64_t a = 0; a < a_count; ++a) {
      const auto [b, iou] = best_match(anchors + a * 4, boxes, g.boxes);
      match[size_t(a)] = b, match_iou[size_t(a)] = iou;
      for (int64_t k = 0; k < g.boxes; ++k) {
        box_best[size_t(k)] = std::max(box_best[size_t(k)], detection::box_iou(anchors + a * 4, boxes + k * 4));
      }
    }
    std::vector<uint64_t> category(static_cast<size_t>(a_count));
    for (int64_t a = 0; a < a_count; ++a) {
      bool low_quality = false;  // the anchor is (one of) some box's best
      for (int64_t k = 0; k < g.boxes && !low_quality; ++k) {
        low_quality = box_best[size_t(k)] > 0.0f && detection::box_iou(anchors + a * 4, boxes + k * 4) == box_best[size_t(k)];
      }
      const float iou = match_iou[size_t(a)];
      category[size_t(a)] = iou >= g.foreground_iou || low_quality ? kPositive
                            : iou < g.background_iou               ? kNegative
                                                                   : kIgnored;
    }
    const std::vector<int64_t> order = sampling_order(category, sample_ids[n], step, kRpnSamplerStream);
    const int64_t positives = std::count(category.begin(), category.end(), uint64_t{kPositive});
    const int64_t negatives = std::count(category.begin(), category.end(), uint64_t{kNegative});
    const int64_t take_positive = std::min(positives, g.max_positives());
    const int64_t take_negative = std::min(negatives, g.sampled_per_image - take_positive);
    const float weight = 1.0f / static_cast<float>(g.batch * std::max<int64_t>(take_positive + take_negative, 1));
    auto take = [&](int64_t a, bool positive) {
      const int64_t i = n * a_count + a;
      labels[i] = positive ? 1.0f : 0.0f;
      label_weights[i] = weight;
      if (!positive) return;
      detection::encode_box(anchors + a * 4, boxes + match[size_t(a)] * 4, unit_weights, box_targets + i * 4);
      std::fill(box_weights + i * 4, box_weights + i * 4 + 4, weight);
    };
    for (int64_t k = 0; k < take_positive; ++k) take(order[size_t(k)], true);
    for (int64_t k = 0; k < take_negative; ++k) take(order[size_t(positives + k)], false);
  }
}

void roi_sample(const float* proposals, const float* gt_boxes, const int32_t* gt_classes, const int32_t* sample_ids,
                uint64_t step, const RoiSampleGeometry& g, const RoiSampleOutputs& out) {
  const float box_coder_weights[4] = {10, 10, 5, 5};
  const int64_t candidates = g.candidates(), r_count = g.rois_per_image, m_count = g.mask_rois_per_image;
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* boxes = gt_boxes + n * g.boxes * 4;
    auto candidate = [&](int64_t c) {
      return c < g.proposals ? proposals + (n * g.proposals + c) * 4 : boxes + (c - g.proposals) * 4;
    };
    std::vector<uint64_t> category(static_cast<size_t>(candidates));
    std::vector<int64_t> match(static_cast<size_t>(candidates));
    for (int64_t c = 0; c < candidates; ++c) {
      const auto [b, iou] = best_match(candidate(c), boxes, g.boxes);
      match[size_t(c)] = b;
      category[size_t(c)] = iou >= g.foreground_iou ? kPositive : kNegative;
    }
    const std::vector<int64_t> order = sampling_order(category, sample_ids[n], step, kRoiSamplerStream);
    const int64_t positives = std::count(category.begin(), category.end(), uint64_t{kPositive});
    const int64_t take_positive = std::min(positives, g.max_positives());
    const int64_t take_negative = std::min(candidates - positives, r_count - take_positive);
    // Positions in `order` of the sampled candidates: positives, negatives, extra positives, then a repeat.
    std::vector<int64_t> picked;
    for (int64_t k = 0; k < take_positive; ++k) picked.push_back(k);
    for (int64_t k = 0; k < take_negative; ++k) picked.push_back(positives + k);
    for (int64_t k = take_positive; k < positives && int64_t(picked.size()) < r_count; ++k) picked.push_back(k);
    for (size_t k = 0; int64_t(picked.size()) < r_count; ++k) picked.push_back(picked[k]);
    const float box_weight = 1.0f / static_cast<float>(g.batch * r_count);
    for (int64_t r = 0; r < r_count; ++r) {
      const int64_t c = order[size_t(picked[size_t(r)])], i = n * r_count + r;
      const bool positive = category[size_t(c)] == kPositive;
      const float* box = candidate(c);
      out.rois[i * 5] = static_cast<float>(n);
      std::copy(box, box + 4, out.rois + i * 5 + 1);
      out.labels[i] = positive ? gt_classes[n * g.boxes + match[size_t(c)]] : 0;
      out.sampled[i] = static_cast<int32_t>(c);
      std::fill(out.box_targets + i * 4, out.box_targets + i * 4 + 4, 0.0f);
      std::fill(out.box_weights + i * 4, out.box_weights + i * 4 + 4, positive ? box_weight : 0.0f);
      if (positive) detection::encode_box(box, boxes + match[size_t(c)] * 4, box_coder_weights, out.box_targets + i * 4);
    }
    // Mask RoIs: the leading positives of the sampled RoIs, which come first. There is at least one: the
    // ground-truth boxes are candidates of IoU 1.
    const int64_t real = std::min(m_count, take_positive);
    for (int64_t m = 0; m < m_count; ++m) {
      const int64_t r = m < real ? m : 0, i = n * m_count + m;
      const int64_t c = order[size_t(picked[size_t(r)])];
      std::copy(out.rois + (n * r_count + r) * 5, out.rois + (n * r_count + r) * 5 + 5, out.mask_rois + i * 5);
      out.mask_labels[i] = out.labels[n * r_count + r];
      out.mask_boxes[i] = static_cast<int32_t>(match[size_t(c)]);
      out.mask_weights[i] = m < real ? 1.0f / static_cast<float>(g.batch * real) : 0.0f;
    }
  }
}

void mask_targets(const float* mask_rois, const int32_t* mask_boxes, const float* mask_weights, const float* gt_boxes,
                  int64_t rois, int64_t boxes, int64_t resolution, float* targets, float* weights) {
  const float inverse_cells = 1.0f / static_cast<float>(resolution * resolution);
  for (int64_t q = 0; q < rois; ++q) {
    const float* roi = mask_rois + q * 5;
    const float* box = gt_boxes + (static_cast<int64_t>(roi[0]) * boxes + mask_boxes[q]) * 4;
    const float cell_w = detection::sub(roi[3], roi[1]) / static_cast<float>(resolution);
    const float cell_h = detection::sub(roi[4], roi[2]) / static_cast<float>(resolution);
    for (int64_t i = 0; i < resolution; ++i) {
      for (int64_t j = 0; j < resolution; ++j) {
        const float x = detection::add(roi[1], detection::mul(static_cast<float>(j) + 0.5f, cell_w));
        const float y = detection::add(roi[2], detection::mul(static_cast<float>(i) + 0.5f, cell_h));
        const int64_t e = (q * resolution + i) * resolution + j;
        targets[e] = detection::inside_ellipse(box, x, y) ? 1.0f : 0.0f;
        weights[e] = mask_weights[q] * inverse_cells;
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

// The samplers draw with the executor's step (Executor::step), so a step's forward replays exactly and the next
// one draws afresh.
namespace {

void roi_sample(CpuExecutor& e, const Node& n) {
  const auto& o = n.outputs;
  const cpu::RoiSampleOutputs out{e.f32(o[0]), e.i32(o[1]), e.f32(o[2]), e.f32(o[3]), e.i32(o[4]),
                                  e.f32(o[5]), e.i32(o[6]), e.i32(o[7]), e.f32(o[8])};
  cpu::roi_sample(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.i32(n.inputs[3]), e.step(),
                  roi_sample_geometry(n.attributes), out);
}

}  // namespace

void bind_detection_targets_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"rpn_targets",
       [](CpuExecutor& e, const Node& n) {
         cpu::rpn_targets(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.i32(n.inputs[2]), e.step(),
                          rpn_target_geometry(n.attributes), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                          e.f32(n.outputs[2]), e.f32(n.outputs[3]));
       }},
      {"roi_sample", roi_sample},
      {"mask_targets",
       [](CpuExecutor& e, const Node& n) {
         cpu::mask_targets(e.f32(n.inputs[0]), e.i32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.inputs[3]),
                           detection_size(n.attributes, "rois"), detection_size(n.attributes, "boxes"),
                           detection_size(n.attributes, "resolution"), e.f32(n.outputs[0]), e.f32(n.outputs[1]));
       }},
  });
}

}  // namespace sb::detail
