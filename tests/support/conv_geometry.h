// Convolution and pooling geometries for the CPU and CUDA op tests, output sizes computed as the engine does.
#pragma once

#include <cstdint>

#include "src/core/ops/conv2d.h"

namespace sb::test {

// n x h x w x c input, k filters of r x s, one stride and dilation, explicit (possibly asymmetric) padding.
inline Conv2dGeometry geometry(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r, int64_t s,
                               int64_t stride, int64_t dilation, int64_t top, int64_t bottom, int64_t left,
                               int64_t right, int64_t groups = 1) {
  Conv2dGeometry g;
  g.batch = n, g.in_h = h, g.in_w = w, g.in_c = c, g.out_c = k, g.kernel_h = r, g.kernel_w = s;
  g.stride_h = g.stride_w = stride, g.dilation_h = g.dilation_w = dilation;
  g.pad_top = top, g.pad_bottom = bottom, g.pad_left = left, g.pad_right = right, g.groups = groups;
  g.out_h = conv_output_size(h, r, stride, dilation, top, bottom);
  g.out_w = conv_output_size(w, s, stride, dilation, left, right);
  return g;
}

// A k x k pooling window over c channels (one group per channel), padded pad_begin / pad_end on both axes.
inline Conv2dGeometry pool(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t stride, int64_t pad_begin,
                           int64_t pad_end) {
  Conv2dGeometry g;
  g.batch = n, g.in_h = h, g.in_w = w, g.in_c = g.out_c = g.groups = c;
  g.kernel_h = g.kernel_w = k, g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_left = pad_begin, g.pad_bottom = g.pad_right = pad_end;
  g.out_h = conv_output_size(h, k, stride, 1, pad_begin, pad_end);
  g.out_w = conv_output_size(w, k, stride, 1, pad_begin, pad_end);
  return g;
}

}  // namespace sb::test
