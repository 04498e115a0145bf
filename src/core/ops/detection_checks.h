// The input checks Mask R-CNN's op families share in their graph-builder code (src/core/ops/frozen_affine.cpp,
// roi_align.cpp, detection_losses.cpp, proposals.cpp, detection_targets.cpp): "<op>: '<tensor>' must be ...".
#pragma once

#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph.h"
#include "src/core/ops/shape_text.h"

namespace sb::ops {

inline void require_dtype(const TensorInfo& info, DType dtype, const std::string& op) {
  if (info.dtype != dtype) {
    throw UsageError(op + ": '" + info.name + "' must be " + dtype_name(dtype) + ", got " + dtype_name(info.dtype));
  }
}

inline void require_shape(const TensorInfo& info, const std::vector<int64_t>& shape, const std::string& op) {
  if (info.shape != shape) {
    throw UsageError(op + ": '" + info.name + "' must be " + shape_text(shape) + ", got " + shape_text(info.shape));
  }
}

}  // namespace sb::ops
