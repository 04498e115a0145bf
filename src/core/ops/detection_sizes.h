// The one attribute reader Mask R-CNN's op families share (frozen_affine, roi_align, detection_losses, proposals,
// detection_targets: src/core/ops/<family>.h): a size stored as a node attribute, read back as an integer. Each
// family's header holds its own params and readers.
#pragma once

#include <cstdint>
#include <string>

#include "scalebench/graph.h"

namespace sb::detail {

inline int64_t detection_size(const NodeAttributes& a, const std::string& name) {
  return static_cast<int64_t>(a.at(name));
}

}  // namespace sb::detail
