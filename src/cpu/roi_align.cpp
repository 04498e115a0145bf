// CPU multi-scale RoIAlign (src/cpu/roi_align.h), one RoI at a time, the bin's samples summed in order.
#include "src/cpu/roi_align.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/cpu/cpu_bindings.h"
#include "src/cpu/detection_math.h"
#include "src/core/ops/roi_align.h"

namespace sb::cpu {
namespace {

// Calls visit(level, pixel offset of the four neighbours' rows, their weights / samples) for every sample of
// output bin (r, ph, pw).
template <typename Visit>
void for_each_sample(const float* rois, const RoiAlignGeometry& g, int64_t r, int64_t ph, int64_t pw, Visit&& visit) {
  const float* roi = rois + r * 5;
  const float* box = roi + 1;
  const int level = detection::fpn_level(box, g.first_level, g.first_level + g.levels - 1);
  const auto image = static_cast<int64_t>(roi[0]);
  const detection::RoiWindow w = detection::roi_window(box, g.scale(level), g.output_size, g.sampling_ratio, g.aligned);
  const float inverse_count = 1.0f / static_cast<float>(std::max(w.grid_h * w.grid_w, 1));
  const int64_t h = g.height[level], wd = g.width[level];
  for (int iy = 0; iy < w.grid_h; ++iy) {
    const float y = detection::sample_coordinate(w.start_y, w.bin_h, ph, iy, w.grid_h);
    for (int ix = 0; ix < w.grid_w; ++ix) {
      const float x = detection::sample_coordinate(w.start_x, w.bin_w, pw, ix, w.grid_w);
      const detection::BilinearPoint p = detection::bilinear_point(y, x, h, wd);
      if (p.empty) continue;
      const int64_t base = image * h * wd;
      const int64_t pixels[4] = {base + p.y_low * wd + p.x_low, base + p.y_low * wd + p.x_high,
                                 base + p.y_high * wd + p.x_low, base + p.y_high * wd + p.x_high};
      const float weights[4] = {p.w1 * inverse_count, p.w2 * inverse_count, p.w3 * inverse_count,
                                p.w4 * inverse_count};
      visit(level, pixels, weights);
    }
  }
}

}  // namespace

void roi_align_forward(const float* const* features, const float* rois, float* y, const RoiAlignGeometry& g) {
  const int64_t c = g.channels, s = g.output_size;
  std::vector<double> sums(static_cast<size_t>(c));
  for (int64_t r = 0; r < g.rois; ++r) {
    for (int64_t ph = 0; ph < s; ++ph) {
      for (int64_t pw = 0; pw < s; ++pw) {
        std::fill(sums.begin(), sums.end(), 0.0);
        for_each_sample(rois, g, r, ph, pw, [&](int level, const int64_t* pixels, const float* weights) {
          for (int k = 0; k < 4; ++k) {
            const float* row = features[level] + pixels[k] * c;
            for (int64_t ch = 0; ch < c; ++ch) sums[size_t(ch)] += double(weights[k]) * row[ch];
          }
        });
        float* out = y + ((r * s + ph) * s + pw) * c;
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = static_cast<float>(sums[size_t(ch)]);
      }
    }
  }
}

void roi_align_backward(const float* dy, const float* rois, float* const* dfeatures, const RoiAlignGeometry& g) {
  const int64_t c = g.channels, s = g.output_size;
  for (int l = 0; l < g.levels; ++l) {
    std::memset(dfeatures[l], 0, sizeof(float) * static_cast<size_t>(g.batch * g.height[l] * g.width[l] * c));
  }
  for (int64_t r = 0; r < g.rois; ++r) {
    for (int64_t ph = 0; ph < s; ++ph) {
      for (int64_t pw = 0; pw < s; ++pw) {
        const float* d = dy + ((r * s + ph) * s + pw) * c;
        for_each_sample(rois, g, r, ph, pw, [&](int level, const int64_t* pixels, const float* weights) {
          for (int k = 0; k < 4; ++k) {
            float* row = dfeatures[level] + pixels[k] * c;
            for (int64_t ch = 0; ch < c; ++ch) row[ch] += weights[k] * d[ch];
          }
        });
      }
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void roi_align(CpuExecutor& e, const Node& n) {
  const cpu::RoiAlignGeometry g = roi_align_geometry(n.attributes);
  std::vector<const float*> levels;
  for (int l = 0; l < g.levels; ++l) levels.push_back(e.f32(n.inputs[size_t(l)]));
  cpu::roi_align_forward(levels.data(), e.f32(n.inputs.back()), e.f32(n.outputs[0]), g);
}

void roi_align_backward(CpuExecutor& e, const Node& n) {
  const cpu::RoiAlignGeometry g = roi_align_geometry(n.attributes);
  std::vector<float*> levels;
  for (TensorId id : n.outputs) levels.push_back(e.f32(id));
  cpu::roi_align_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), levels.data(), g);
}

}  // namespace

void bind_roi_align_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"roi_align", roi_align},
      {"roi_align_backward", roi_align_backward},
  });
}

}  // namespace sb::detail
