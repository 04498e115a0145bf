// The detection-losses family (bce_with_logits_loss, smooth_l1_loss and their backward ops;
// src/core/ops/detection_losses.cpp): Mask R-CNN's weighted element-wise losses, class-specific predictions read
// at a per-group column (src/cpu/detection_losses.h says how). ClassSelection is the nodes' params.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"
#include "src/core/ops/detection_sizes.h"

namespace sb {

// x viewed as (groups, rows, classes, inner), targets and weights (groups, rows, inner); without columns,
// classes = 1 and the three have one shape.
struct ClassSelection {
  int64_t groups = 0, rows = 1, classes = 1, inner = 1;
  int64_t elements() const { return groups * rows * inner; }                // of targets and weights
  int64_t input_elements() const { return groups * rows * classes * inner; }  // of x
};
NodeAttributes encode(const ClassSelection& s);  // groups, rows, classes, inner (smooth L1 adds "beta")

}  // namespace sb

namespace sb::detail {

inline ClassSelection class_selection(const NodeAttributes& a) {
  ClassSelection s;
  s.groups = detection_size(a, "groups"), s.rows = detection_size(a, "rows");
  s.classes = detection_size(a, "classes"), s.inner = detection_size(a, "inner");
  return s;
}

}  // namespace sb::detail
