// YOLOv3 loss CPU reference (yolo_loss.h): plain loops in double; one pass computes the loss and, when asked,
// every gradient, so forward and backward cannot disagree on the targets.
#include "src/cpu/yolo_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }  // BCE(x, 0)

double iou_centered(double x1, double y1, double w1, double h1, double x2, double y2, double w2, double h2) {
  const double iw = std::min(x1 + w1 / 2, x2 + w2 / 2) - std::max(x1 - w1 / 2, x2 - w2 / 2);
  const double ih = std::min(y1 + h1 / 2, y2 + h2 / 2) - std::max(y1 - h1 / 2, y2 - h2 / 2);
  if (iw <= 0 || ih <= 0) return 0.0;
  const double inter = iw * ih;
  return inter / (w1 * h1 + w2 * h2 - inter);
}

void check(const YoloGeometry& g) {
  SB_CHECK(g.batch > 0 && g.classes > 0 && g.boxes > 0 && g.grid[0] > 0 && g.grid[1] > 0 && g.grid[2] > 0,
           "yolo_loss: sizes must be positive");
}

double run(const float* const heads[kYoloHeads], const float* truth, float* const dheads[kYoloHeads],
           const YoloGeometry& g, float seed) {
  check(g);
  const int64_t per_anchor = 5 + g.classes, channels = g.channels();
  // assigned[s][n][cell][a] = the ground-truth row, or -1.
  std::vector<std::vector<int32_t>> assigned(kYoloHeads);
  for (int s = 0; s < kYoloHeads; ++s) assigned[s].assign(size_t(g.batch * g.grid[s] * g.grid[s] * 3), -1);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t b = 0; b < g.boxes; ++b) {
      const float* t = truth + (n * g.boxes + b) * 5;
      if (!(t[3] > 0 && t[4] > 0)) continue;
      int best = 0;
      double best_iou = -1;
      for (int k = 0; k < 9; ++k) {
        const double aw = kYoloAnchorPixels[k][0] / kYoloAnchorReference;
        const double ah = kYoloAnchorPixels[k][1] / kYoloAnchorReference;
        const double inter = std::min<double>(t[3], aw) * std::min<double>(t[4], ah);
        const double iou = inter / (double(t[3]) * t[4] + aw * ah - inter);
        if (iou > best_iou) best_iou = iou, best = k;
      }
      const int s = 2 - best / 3, a = best % 3;
      const int64_t grid = g.grid[s];
      const int64_t gx = std::min<int64_t>(int64_t(std::floor(double(t[1]) * grid)), grid - 1);
      const int64_t gy = std::min<int64_t>(int64_t(std::floor(double(t[2]) * grid)), grid - 1);
      assigned[s][size_t(((n * grid + gy) * grid + gx) * 3 + a)] = int32_t(b);
    }
  }
  double total = 0;
  const double scale = double(seed) / double(g.batch);
  for (int s = 0; s < kYoloHeads; ++s) {
    const int64_t grid = g.grid[s];
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t gy = 0; gy < grid; ++gy) {
        for (int64_t gx = 0; gx < grid; ++gx) {
          for (int a = 0; a < 3; ++a) {
            const int k = (2 - s) * 3 + a;
            const double aw = kYoloAnchorPixels[k][0] / kYoloAnchorReference;
            const double ah = kYoloAnchorPixels[k][1] / kYoloAnchorReference;
            const int64_t base = ((n * grid + gy) * grid + gx) * channels + a * per_anchor;
            const float* p = heads[s] + base;
            float* d = dheads != nullptr ? dheads[s] + base : nullptr;
            if (d != nullptr) std::fill(d, d + per_anchor, 0.0f);
            const int32_t owner = assigned[s][size_t(((n * grid + gy) * grid + gx) * 3 + a)];
            const double sx = sigmoid(p[0]), sy = sigmoid(p[1]), so = sigmoid(p[4]);
            if (owner < 0) {
              const double bx = (double(gx) + sx) / double(grid), by = (double(gy) + sy) / double(grid);
              const double bw = aw * std::exp(double(p[2])), bh = ah * std::exp(double(p[3]));
              double best = 0;
              for (int64_t b = 0; b < g.boxes; ++b) {
                const float* t = truth + (n * g.boxes + b) * 5;
                if (t[3] > 0 && t[4] > 0) best = std::max(best, iou_centered(bx, by, bw, bh, t[1], t[2], t[3], t[4]));
              }
              if (best > kYoloIgnoreThreshold) continue;
              total += softplus(p[4]);
              if (d != nullptr) d[4] = float(scale * so);
              continue;
            }
            const float* t = truth + (n * g.boxes + owner) * 5;
            const double box_scale = 2.0 - double(t[3]) * t[4];
            const double tx = double(t[1]) * grid - double(gx), ty = double(t[2]) * grid - double(gy);
            const double tw = std::log(double(t[3]) / aw), th = std::log(double(t[4]) / ah);
            total += softplus(-p[4]);
            total += box_scale * ((sx - tx) * (sx - tx) + (sy - ty) * (sy - ty) + (p[2] - tw) * (p[2] - tw) +
                                  (p[3] - th) * (p[3] - th));
            const int64_t cls = int64_t(t[0]);
            for (int64_t c = 0; c < g.classes; ++c) total += softplus(c == cls ? -p[5 + c] : p[5 + c]);
            if (d == nullptr) continue;
            d[0] = float(scale * box_scale * 2 * (sx - tx) * sx * (1 - sx));
            d[1] = float(scale * box_scale * 2 * (sy - ty) * sy * (1 - sy));
            d[2] = float(scale * box_scale * 2 * (p[2] - tw));
            d[3] = float(scale * box_scale * 2 * (p[3] - th));
            d[4] = float(scale * (so - 1.0));
            for (int64_t c = 0; c < g.classes; ++c) {
              d[5 + c] = float(scale * (sigmoid(p[5 + c]) - (c == cls ? 1.0 : 0.0)));
            }
          }
        }
      }
    }
  }
  return total / double(g.batch);
}

}  // namespace

double yolo_loss_forward(const float* const heads[kYoloHeads], const float* truth, const YoloGeometry& g) {
  return run(heads, truth, nullptr, g, 1.0f);
}

void yolo_loss_backward(const float* const heads[kYoloHeads], const float* truth, float* const dheads[kYoloHeads],
                        const YoloGeometry& g, float seed) {
  run(heads, truth, dheads, g, seed);
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

cpu::YoloGeometry yolo_geometry(const Node& n) {
  cpu::YoloGeometry g;
  g.batch = size_attr(n, "batch"), g.classes = size_attr(n, "classes"), g.boxes = size_attr(n, "boxes");
  g.grid[0] = size_attr(n, "g0"), g.grid[1] = size_attr(n, "g1"), g.grid[2] = size_attr(n, "g2");
  return g;
}

void yolo_loss(CpuExecutor& e, const Node& n) {
  const float* heads[3] = {e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2])};
  *e.f32(n.outputs[0]) = static_cast<float>(cpu::yolo_loss_forward(heads, e.f32(n.inputs[3]), yolo_geometry(n)));
}

void yolo_loss_backward(CpuExecutor& e, const Node& n) {  // the loss starts the backward pass: dloss = 1
  const float* heads[3] = {e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2])};
  float* const dheads[3] = {e.f32(n.outputs[0]), e.f32(n.outputs[1]), e.f32(n.outputs[2])};
  cpu::yolo_loss_backward(heads, e.f32(n.inputs[3]), dheads, yolo_geometry(n),
                          gradient_weight(n) * e.loss_weight(n.inputs[3]));
}

}  // namespace

void bind_yolo_loss_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"yolo_loss", yolo_loss},
      {"yolo_loss_backward", yolo_loss_backward},
  });
}

}  // namespace sb::detail
