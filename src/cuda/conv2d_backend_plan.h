// One convolution pass as a finalized cuDNN backend execution plan (the graph API that cuDNN's legacy calls
// now sit on). Why: on an H200 with cuDNN 9, every legacy cudnnConvolution* call cost about 200 us of CPU time
// (measured: deeplabv3's 324 convolution calls took 70 ms of host time per step against about 50 ms of GPU
// time, so the GPU waited for the host, and NASNet-A Large's thousands of calls made its step host-bound). A
// plan built once and executed with a variant pack that is rebuilt only when the pointers change costs a
// fraction of that. Built from conv2d_cudnn.cpp's runner, which keeps the legacy call as the fallback when no
// engine finalizes within the workspace or a pointer is less aligned than the plan assumes.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>

#include "scalebench/dtype.h"
#include "src/cuda/conv2d.h"
#include "src/core/ops/conv2d.h"

namespace sb::cuda {

// Pointer alignment the plan's tensors declare; run() checks it.
constexpr uint64_t kCudnnPlanAlignment = 16;

// The finalized plan and what it refers to, shared by every node of the same shape (CudnnConvPlan::build
// caches them per device: NASNet-A Large repeats a few hundred shapes over thousands of nodes).
struct CudnnPlanCore;

class CudnnConvPlan {
 public:
  // x is the (possibly zero-bordered) input of padded_h x padded_w with symmetric padding pad_h / pad_w.
  // Returns null when no engine offered by cuDNN's heuristics (mode A) finalizes within `workspace_budget`
  // with allowed notes (no down-converted inputs; no tensor cores for exact fp32; no run-time compilation), and
  // for grouped convolutions, whose engines cuDNN 9 compiles at run time (building NASNet-A Large's replica
  // did not finish in 150 s with them; they keep the legacy call).
  static std::unique_ptr<CudnnConvPlan> build(cudnnHandle_t handle, const Conv2dGeometry& g, int64_t padded_h,
                                              int64_t padded_w, int64_t pad_h, int64_t pad_w, DType dtype,
                                              bool exact_fp32, ConvPass pass, uint64_t workspace_budget);
  ~CudnnConvPlan();
  CudnnConvPlan(const CudnnConvPlan&) = delete;
  CudnnConvPlan& operator=(const CudnnConvPlan&) = delete;

  // The pass's three tensors in the order x, w, y (forward), dy, w, dx (backward data) or x, dy, dw
  // (backward filter), as Conv2dRunner::run takes them; `workspace` holds workspace_bytes().
  void execute(cudnnHandle_t handle, const void* first, const void* second, void* out, void* workspace);
  uint64_t workspace_bytes() const;
  std::string engine() const;

 private:
  explicit CudnnConvPlan(std::shared_ptr<const CudnnPlanCore> core) : core_(std::move(core)) {}
  std::shared_ptr<const CudnnPlanCore> core_;
  cudnnBackendDescriptor_t variant_pack_ = nullptr;  // for the pointers below
  const void* pointers_[4] = {nullptr, nullptr, nullptr, nullptr};
};

}  // namespace sb::cuda
