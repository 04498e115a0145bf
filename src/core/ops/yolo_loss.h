// The yolo_loss family (yolo_loss, yolo_loss_backward): the node's parameters, and the scratch of the YOLOv3
// loss on a device that works per prediction (src/cuda/yolo_loss.h): the slot map (int32 per prediction) and
// the per-prediction losses (fp32), N · 3 · Σ G² entries each. The graph builder declares it as a kWorkspace
// tensor so the planner accounts for it.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// Three heads (N, G_s, G_s, 3 (5 + classes)) and the ground truth (N, boxes, 5).
struct YoloLossParams {
  int64_t batch = 0, boxes = 0, classes = 0;
  int64_t grid[3] = {0, 0, 0};  // attributes g0, g1, g2
};
NodeAttributes encode(const YoloLossParams& params);
YoloLossParams yolo_loss_params(const Node& node);  // of yolo_loss and yolo_loss_backward

inline int64_t yolo_predictions(int64_t batch, const int64_t grid[3]) {
  return batch * 3 * (grid[0] * grid[0] + grid[1] * grid[1] + grid[2] * grid[2]);
}

inline int64_t yolo_workspace_bytes(int64_t batch, const int64_t grid[3]) {
  return yolo_predictions(batch, grid) * 8;
}

}  // namespace sb
