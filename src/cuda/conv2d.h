// 2-D convolution on the GPU through cuDNN (NHWC; the geometry of src/core/ops/conv2d.h, the same
// passes as src/cpu/conv2d.h). A Conv2dRunner is one pass of one conv node: its descriptors are built and its
// algorithm chosen once, when the CUDA executor is constructed — cuDNN's v7 heuristics rank the algorithms,
// the first that runs for these descriptors, with an allowed math mode and a workspace that fits the node's
// workspace tensor, is kept — and run() only enqueues it. Math: exact fp32 (FMA only), TF32 for fp32 when the
// executor allows TF32 GEMMs, tensor cores with fp32 accumulation for bf16 / fp16. cuDNN's legacy API pads
// both sides alike, so an asymmetric padding (TF "SAME" with stride 2, NASNet's ZeroPad2d((1, 0, 1, 0)))
// materialises the extra rows and columns: x is copied into a zero-bordered buffer at the front of the
// workspace (conv2d_padded_copy_bytes) and the symmetric remainder stays implicit; backward data computes
// the padded gradient there and crops it. 16-bit convolutions whose C is not a multiple of 8 (pix2pixHD's label
// maps; conv2d_cudnn_in_channels says which) also pad the channels: x and w are copied with zero channels up to
// a multiple of 8 (the filter's copy follows x's in the workspace), dx and dw are computed padded and cropped,
// and algorithm() says "channels padded C -> C'". The bias is added by cuda::bias_add_forward after the forward.
// Depthwise geometries (channel multiplier 1, K x K with K in {3, 5, 7}, stride 1 or 2, no dilation) run on
// scalebench's own kernels instead (src/cuda/depthwise_conv2d.h): no cuDNN descriptors, no padded copy, and the
// backward filter's partial sums as the library workspace; algorithm() then says "scalebench depthwise".
// Built from conv2d_cudnn.cpp with cuDNN, from conv2d_without_cudnn.cpp (a UsageError) without it.
// Tests: tests/gpu/test_cuda_conv2d.cpp (suite CudaConv2d).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "scalebench/dtype.h"
#include "src/core/ops/conv2d.h"

namespace sb::cuda {

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

class Conv2dRunner {
 public:
  // `dtype`: x, w, y and their gradients (fp32, bf16 or fp16); `workspace_bytes`: the size of the node's
  // workspace tensor (padded copy + what cuDNN may use). Throws UsageError when no algorithm fits, or when
  // scalebench was built without cuDNN.
  Conv2dRunner(const Conv2dGeometry& geometry, DType dtype, bool allow_tf32, ConvPass pass, uint64_t workspace_bytes);
  ~Conv2dRunner();
  Conv2dRunner(const Conv2dRunner&) = delete;
  Conv2dRunner& operator=(const Conv2dRunner&) = delete;

  // forward: (x, w) -> y; backward data: (dy, w) -> dx; backward filter: (x, dy) -> dw. Device pointers in the
  // dtype given above; the output is overwritten. `workspace` holds workspace_bytes.
  void run(const void* first, const void* second, void* out, void* workspace, cudaStream_t stream) const;

  std::string algorithm() const;        // cuDNN's algorithm and math mode, or "scalebench depthwise"
  uint64_t library_workspace() const;   // the bytes of workspace the chosen algorithm uses

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sb::cuda
