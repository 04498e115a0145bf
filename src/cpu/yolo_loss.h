// The YOLOv3 training loss (darknet's yolo_layer, shared/WORKLOADS.md §3) over the three detection heads, CPU
// reference (sb::cuda::yolo_loss_* take the same arguments plus a workspace and a stream).
//
// Heads: (N, G_s, G_s, 3 · (5 + C)) NHWC logits for the strides 32, 16, 8 (G = 19, 38, 76 at 608²); channel
// a · (5 + C) + k of cell (gy, gx) is anchor a's tx, ty, tw, th, objectness, then C class logits. Ground truth:
// (N, B, 5) fp32 rows (class, cx, cy, w, h), coordinates normalised to the image; a row with w <= 0 is padding.
// Anchors: darknet's nine (yolov3.cfg) divided by 608, so the same relative anchors serve every image size;
// anchors 6-8 belong to head 0, 3-5 to head 1, 0-2 to head 2.
//
// Target assignment: each box goes to the anchor of best width/height IoU (centres aligned; ties to the lower
// index), at the cell floor(cx · G), floor(cy · G) of that anchor's head; when boxes share a slot the later
// one wins (darknet overwrites). For every prediction, with s = sigmoid, the decoded box is
// ((gx + s(tx)) / G, (gy + s(ty)) / G, aw · exp(tw), ah · exp(th)).
//   objectness: BCE-with-logits against 1 at assigned slots, 0 elsewhere, except that unassigned predictions
//               whose decoded box has IoU > 0.7 with a ground-truth box of the image are ignored
//               (darknet's ignore_thresh; the ignore mask is not differentiated);
//   box:        at assigned slots, (2 - w h) · [(s(tx) - (cx G - gx))² + (s(ty) - (cy G - gy))² +
//               (tw - log(w / aw))² + (th - log(h / ah))²] (darknet's MSE on tx, ty, tw, th with its scale);
//   class:      at assigned slots, Σ_c BCE-with-logits(tc, c == class) (multi-label, darknet/ultralytics).
// loss = (objectness + box + class) / N. The backward pass starts here (dloss = 1, times a loss scale).
// Tests: tests/unit/test_cpu_yolo_loss.cpp (suite CpuYoloLoss), tests/gpu/test_cuda_losses.cpp (CudaYoloLoss).
#pragma once

#include <cstdint>

namespace sb::cpu {

constexpr int kYoloHeads = 3;
constexpr int kYoloAnchorsPerHead = 3;
constexpr float kYoloIgnoreThreshold = 0.7f;
// darknet yolov3.cfg anchors in pixels of a 608 x 608 input (w, h), divided by 608 where used.
constexpr float kYoloAnchorPixels[9][2] = {{10, 13},  {16, 30},  {33, 23},   {30, 61},  {62, 45},
                                           {59, 119}, {116, 90}, {156, 198}, {373, 326}};
constexpr float kYoloAnchorReference = 608.0f;

struct YoloGeometry {
  int64_t batch = 0;
  int64_t grid[kYoloHeads] = {0, 0, 0};  // G of each head, head 0 the coarsest
  int64_t classes = 0;
  int64_t boxes = 0;  // ground-truth rows per image
  int64_t channels() const { return kYoloAnchorsPerHead * (5 + classes); }
};

// Returns the loss; heads[s] (N, G_s, G_s, 3 (5 + C)), truth (N, B, 5).
double yolo_loss_forward(const float* const heads[kYoloHeads], const float* truth, const YoloGeometry& g);
// dheads[s] = seed · dloss/dheads[s] (every element written).
void yolo_loss_backward(const float* const heads[kYoloHeads], const float* truth, float* const dheads[kYoloHeads],
                        const YoloGeometry& g, float seed);

}  // namespace sb::cpu
