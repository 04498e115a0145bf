// CPU references of Mask R-CNN's two element-wise losses (sb::cpu): binary cross-entropy with logits (RPN
// objectness, the mask head's per-pixel loss) and smooth L1 (RPN and box-head regression). Both are weighted sums
// loss = sum_e weights[e] · f(x[e], targets[e]): the samplers put the normalisation (1 / sampled anchors, 1 / RoIs,
// 1 / mask pixels) and the selection (sampled, positive) into the weights, so every shape stays static.
// Class-specific predictions (the box head's 81 x 4 deltas, the mask head's 81 masks) are read at a per-group
// column: x viewed as (groups, rows, classes, inner), targets and weights (groups, rows, inner), element
// (g, s, i) <-> x[g, s, columns[g], i]. Without columns, classes = 1 and the three have one shape.
// The CUDA device has the same names (src/cuda/detection_losses.h). Tests: tests/unit/test_cpu_detection_ops.cpp.
#pragma once

#include <cstdint>

#include "src/core/ops/detection_losses.h"

namespace sb::cpu {

// The selection lives with the family's graph-builder code (src/core/ops/detection_losses.h).
using sb::ClassSelection;

// The sums, accumulated in double in element order and rounded once. columns may be null (classes = 1).
float bce_with_logits_forward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                              const ClassSelection& s);
float smooth_l1_forward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                        const ClassSelection& s, float beta);

// dx (overwritten, zero off the selected columns) = seed · weights · f'(x): sigmoid(x) - t, and d / beta inside
// |d| < beta, sign(d) outside (d = x - t).
void bce_with_logits_backward(const float* x, const float* targets, const float* weights, const int32_t* columns,
                              float* dx, const ClassSelection& s, float seed);
void smooth_l1_backward(const float* x, const float* targets, const float* weights, const int32_t* columns, float* dx,
                        const ClassSelection& s, float beta, float seed);

}  // namespace sb::cpu
