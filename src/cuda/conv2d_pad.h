// The zero-bordered copy of an NHWC tensor and its inverse crop, for convolutions whose padding cuDNN's
// legacy API cannot express (src/cuda/conv2d.h). T is float, bf16 or fp16; device pointers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// padded (n, padded_h, padded_w, padded_c) = x (n, h, w, c) placed at row `top`, column `left`, channels
// [0, c); zeros elsewhere (padded_c >= c: the channels cuDNN's tensor-core engines want).
template <typename T>
void conv2d_pad_input(const T* x, T* padded, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top, int64_t left,
                      int64_t padded_h, int64_t padded_w, int64_t padded_c, cudaStream_t stream);

// x (n, h, w, c) = the window of padded (n, padded_h, padded_w, padded_c) at row `top`, column `left`,
// channels [0, c).
template <typename T>
void conv2d_crop(const T* padded, T* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t top, int64_t left,
                 int64_t padded_h, int64_t padded_w, int64_t padded_c, cudaStream_t stream);

}  // namespace sb::cuda
