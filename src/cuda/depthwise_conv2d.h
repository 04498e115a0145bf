// scalebench's own depthwise convolution kernels (NHWC, channel multiplier 1, K x K with K in {3, 5, 7}, stride
// 1 or 2, dilation 1, any per-side padding): Conv2dRunner (src/cuda/conv2d.h) runs them instead of cuDNN when
// detail::depthwise_kernels_apply(geometry) holds, because cuDNN's legacy API picks slow kernels for grouped NHWC
// convolutions (NASNet-A Large: 647 of its 813 ms step in convolution, almost all of it depthwise). T is float,
// bf16 or fp16 storage, fp32 accumulation; x, w, y and their gradients all in T; device pointers, stream-ordered.
// Per-thread work: src/cuda/depthwise_conv2d_tiles.h. Tests: tests/gpu/test_cuda_conv2d.cpp (suite CudaConv2d)
// against the CPU reference, tests/unit/test_depthwise_conv2d_tiles.cpp (the index arithmetic on the CPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/core/ops/conv2d.h"

namespace sb::cuda {

// y (N, Ho, Wo, C) = x (N, H, W, C) ⋆ w (C, K, K, 1); y overwritten.
template <typename T>
void depthwise_conv2d_forward(const T* x, const T* w, T* y, const Conv2dGeometry& g, cudaStream_t stream);

// dx (N, H, W, C) from dy (N, Ho, Wo, C) and w: stride 1 as the forward of the rotated filter, stride 2 as a
// gather over the outputs that read each input pixel (no atomics); dx overwritten.
template <typename T>
void depthwise_conv2d_backward_data(const T* dy, const T* w, T* dx, const Conv2dGeometry& g, cudaStream_t stream);

// dw (C, K, K, 1) = sum over N·Ho·Wo of dy · x at each tap, in two deterministic levels: each of `blocks` blocks
// per channel slice writes its fp32 partial per (tap, channel) to `partials`
// (detail::depthwise_filter_workspace_bytes(g, blocks) bytes), then one kernel adds the blocks' partials in order
// (in double) and rounds once to T. `blocks` from detail::depthwise_filter_blocks, fixed per node.
template <typename T>
void depthwise_conv2d_backward_filter(const T* x, const T* dy, T* dw, const Conv2dGeometry& g, int64_t blocks,
                                      float* partials, cudaStream_t stream);

// depthwise_filter_blocks for the current device (its SM count).
int64_t depthwise_filter_blocks_here(const Conv2dGeometry& g, uint64_t element_bytes, uint64_t workspace_bytes);

}  // namespace sb::cuda
