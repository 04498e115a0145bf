// The pooling family (max_pool2d, avg_pool2d and their backward ops; global average pooling is an avg_pool2d
// whose window is the whole image). The window geometry is a depthwise Conv2dGeometry (src/core/ops/conv2d.h:
// in_c = out_c = groups = C, dilation 1) stored as the node's attributes, plus count_include_pad for averages.
// Kernels: src/cpu/pooling.cpp, src/cuda/pooling.cu.
#pragma once

#include "src/core/ops/conv2d.h"

namespace sb {

// Throws UsageError unless g is a pooling geometry whose windows each hold at least one input pixel; with
// windows_of_padding_allowed (an average that counts the padding) windows of padding only are accepted.
void check_pool_geometry(const Conv2dGeometry& g, bool windows_of_padding_allowed = false);

}  // namespace sb
