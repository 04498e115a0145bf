// Conv2dRunner through cuDNN (src/cuda/conv2d.h). Each pass runs as a backend execution plan built in the
// constructor (conv2d_backend_plan.h: the legacy calls cost ~200 us of CPU each on cuDNN 9, which left the GPU
// waiting for the host in the convolutional networks). The legacy API stays as the fallback, for a geometry no
// backend engine finalizes and for pointers less aligned than the plan declares: NHWC tensor and filter
// descriptors, the algorithm ranked first by cudnnGet*Algorithm_v7 among those that run, use an allowed math
// mode and fit the workspace, chosen in the constructor (never per step). cudnnFind* (timed choice, PyTorch's
// cudnn.benchmark) was tried and measured slower in the training step on H200 (commit 4b89d4b: YOLOv3's
// convolution passes 16.8 -> 24.1 ms, NASNet-A Large's 647 -> 705 ms per step), so the heuristics stay.
// Depthwise geometries that scalebench's own kernels cover (src/cuda/depthwise_conv2d.h) skip cuDNN altogether.
#include <cudnn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "scalebench/error.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/conv2d_backend_plan.h"
#include "src/cuda/conv2d_pad.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/cudnn_check.h"
#include "src/cuda/depthwise_conv2d.h"
#include "src/cuda/depthwise_conv2d_tiles.h"

namespace sb::cuda {
namespace {

// One handle per device for the process (cudnnCreate costs ~100 ms); its stream is set before each call.
// Never destroyed: cudnnDestroy after the CUDA context is torn down at exit is not safe.
cudnnHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static std::map<int, cudnnHandle_t> handles;
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cudnnHandle_t handle = nullptr;
  SB_CUDNN_CHECK(cudnnCreate(&handle));
  handles[device] = handle;
  return handle;
}

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDNN_DATA_FLOAT;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::kFloat16: return CUDNN_DATA_HALF;
    default: throw UsageError(std::string("conv2d: no cuDNN convolution for ") + dtype_name(dtype) + " tensors");
  }
}

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "unknown";
}

// An (n, h, w, c) NHWC tensor and where it sits in its copy (n, padded_h, padded_w, padded_c): x in the padded
// input, or a (K, R, S, C) filter in its channel-padded copy.
struct CopyWindow {
  int64_t n = 0, h = 0, w = 0, c = 0, top = 0, left = 0, padded_h = 0, padded_w = 0, padded_c = 0;
};

template <typename T>
void pad(const void* x, void* padded, const CopyWindow& v, cudaStream_t stream) {
  conv2d_pad_input(static_cast<const T*>(x), static_cast<T*>(padded), v.n, v.h, v.w, v.c, v.top, v.left, v.padded_h,
                   v.padded_w, v.padded_c, stream);
}

template <typename T>
void crop(const void* padded, void* x, const CopyWindow& v, cudaStream_t stream) {
  conv2d_crop(static_cast<const T*>(padded), static_cast<T*>(x), v.n, v.h, v.w, v.c, v.top, v.left, v.padded_h,
              v.padded_w, v.padded_c, stream);
}

void pad_as(DType dtype, const void* x, void* padded, const CopyWindow& v, cudaStream_t stream) {
  switch (dtype) {
    case DType::kFloat32: return pad<float>(x, padded, v, stream);
    case DType::kBFloat16: return pad<bf16>(x, padded, v, stream);
    default: return pad<fp16>(x, padded, v, stream);
  }
}

void crop_as(DType dtype, const void* padded, void* x, const CopyWindow& v, cudaStream_t stream) {
  switch (dtype) {
    case DType::kFloat32: return crop<float>(padded, x, v, stream);
    case DType::kBFloat16: return crop<bf16>(padded, x, v, stream);
    default: return crop<fp16>(padded, x, v, stream);
  }
}

// One pass through the depthwise kernels: (first, second) are (x, w), (dy, w) or (x, dy) as in run().
template <typename T>
void run_depthwise(ConvPass pass, const Conv2dGeometry& g, int64_t filter_blocks, const void* first,
                   const void* second, void* out, void* workspace, cudaStream_t stream) {
  const T* a = static_cast<const T*>(first);
  const T* b = static_cast<const T*>(second);
  switch (pass) {
    case ConvPass::kForward: return depthwise_conv2d_forward(a, b, static_cast<T*>(out), g, stream);
    case ConvPass::kBackwardData: return depthwise_conv2d_backward_data(a, b, static_cast<T*>(out), g, stream);
    case ConvPass::kBackwardFilter:
      return depthwise_conv2d_backward_filter(a, b, static_cast<T*>(out), g, filter_blocks,
                                              static_cast<float*>(workspace), stream);
  }
}


// SB_CUDNN_PLANS=0 keeps every convolution on cuDNN's legacy calls: a way to tell whether a backend engine is
// behind a wrong result or a slow node (the legacy calls cost ~200 us of CPU each, so steps may turn host-bound).
bool backend_plans_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("SB_CUDNN_PLANS");
    return value == nullptr || std::string(value) != "0";
  }();
  return enabled;
}

}  // namespace

struct Conv2dRunner::State {
  Conv2dGeometry g;
  DType dtype = DType::kFloat32;
  ConvPass pass = ConvPass::kForward;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  int algo = -1;
  // scalebench's depthwise kernels instead of cuDNN; the backward filter's blocks of partial sums.
  bool depthwise = false;
  int64_t filter_blocks = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  // The front of the workspace: the copy of x (or dx) with the asymmetric rows/columns and padded channels,
  // then the filter's copy (or dw's) with padded channels; each empty when not needed.
  uint64_t padded_bytes = 0, input_copy_bytes = 0, filter_copy_bytes = 0;
  uint64_t library_bytes = 0;  // what the chosen algorithm uses, after the copies
  CopyWindow input_window, filter_window;  // x in its copy, w in its copy
  std::unique_ptr<CudnnConvPlan> plan;  // null: the legacy call

  ~State() {
    if (conv_desc != nullptr) cudnnDestroyConvolutionDescriptor(conv_desc);
    if (w_desc != nullptr) cudnnDestroyFilterDescriptor(w_desc);
    if (y_desc != nullptr) cudnnDestroyTensorDescriptor(y_desc);
    if (x_desc != nullptr) cudnnDestroyTensorDescriptor(x_desc);
  }
};

Conv2dRunner::Conv2dRunner(const Conv2dGeometry& g, DType dtype, bool allow_tf32, ConvPass pass,
                           uint64_t workspace_bytes)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.g = g, s.dtype = dtype, s.pass = pass;
  const cudnnDataType_t type = data_type(dtype);  // also rejects dtypes neither path runs
  // The depthwise kernels read the per-side padding directly (no padded copy); the backward filter keeps its
  // per-block partial sums at the front of the workspace, and falls back to cuDNN when not one block's fit.
  if (detail::depthwise_kernels_apply(g)) {
    if (pass == ConvPass::kBackwardFilter) {
      s.filter_blocks = depthwise_filter_blocks_here(g, dtype_size(dtype), workspace_bytes);
      s.library_bytes = detail::depthwise_filter_workspace_bytes(g, s.filter_blocks);
    }
    s.depthwise = pass != ConvPass::kBackwardFilter || s.filter_blocks > 0;
    if (s.depthwise) return;
  }
  s.handle = handle_for_current_device();
  s.input_copy_bytes = conv2d_padded_input_bytes(g, dtype_size(dtype));
  s.filter_copy_bytes = conv2d_padded_filter_bytes(g, dtype_size(dtype));
  s.padded_bytes = s.input_copy_bytes + s.filter_copy_bytes;
  if (s.padded_bytes > workspace_bytes) throw UsageError("conv2d: the workspace cannot hold the padded input");
  const uint64_t budget = workspace_bytes - s.padded_bytes;

  // cuDNN sees a symmetric padding of min(begin, end) per axis; the rest is materialised in the copy. It sees
  // the channels of conv2d_cudnn_in_channels, zeros past C in the copies of x and w.
  const int64_t sym_h = std::min(g.pad_top, g.pad_bottom), sym_w = std::min(g.pad_left, g.pad_right);
  Conv2dGeometry seen = g;
  seen.in_c = conv2d_cudnn_in_channels(g, dtype_size(dtype));
  CopyWindow& in = s.input_window;
  in.n = g.batch, in.h = g.in_h, in.w = g.in_w, in.c = g.in_c, in.padded_c = seen.in_c;
  in.top = g.pad_top - sym_h, in.left = g.pad_left - sym_w;
  in.padded_h = g.in_h + (g.pad_top - sym_h) + (g.pad_bottom - sym_h);
  in.padded_w = g.in_w + (g.pad_left - sym_w) + (g.pad_right - sym_w);
  s.filter_window = {g.out_c, g.kernel_h, g.kernel_w, g.in_c, 0, 0, g.kernel_h, g.kernel_w, seen.in_c};

  SB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&s.x_desc));
  SB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&s.y_desc));
  SB_CUDNN_CHECK(cudnnCreateFilterDescriptor(&s.w_desc));
  SB_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&s.conv_desc));
  SB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.x_desc, CUDNN_TENSOR_NHWC, type, int(g.batch), int(seen.in_c),
                                            int(in.padded_h), int(in.padded_w)));
  SB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.y_desc, CUDNN_TENSOR_NHWC, type, int(g.batch), int(g.out_c),
                                            int(g.out_h), int(g.out_w)));
  SB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(s.w_desc, type, CUDNN_TENSOR_NHWC, int(g.out_c), int(seen.in_per_group()),
                                            int(g.kernel_h), int(g.kernel_w)));
  SB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(s.conv_desc, int(sym_h), int(sym_w), int(g.stride_h),
                                                 int(g.stride_w), int(g.dilation_h), int(g.dilation_w),
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  SB_CUDNN_CHECK(cudnnSetConvolutionGroupCount(s.conv_desc, int(g.groups)));
  int n = 0, c = 0, h = 0, w = 0;
  SB_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv_desc, s.x_desc, s.w_desc, &n, &c, &h, &w));
  if (h != g.out_h || w != g.out_w || c != g.out_c || n != g.batch) {
    throw UsageError("conv2d: cuDNN's output extent differs from the graph's");
  }

  // fp32 without TF32 must not touch tensor cores; fp32 with TF32 and the 16-bit types may.
  const bool exact = dtype == DType::kFloat32 && !allow_tf32;
  const cudnnMathType_t asked = dtype != DType::kFloat32 ? CUDNN_TENSOR_OP_MATH
                                : exact                  ? CUDNN_FMA_MATH
                                                         : CUDNN_DEFAULT_MATH;
  SB_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv_desc, asked));
  auto allowed = [&](cudnnMathType_t math) {
    if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;  // would round fp32 operands to 16 bits
    return !exact || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
  };
  // Exact fp32 runs with FMA math whatever the heuristics report (CUDNN_DEFAULT_MATH lets fp32 convolutions
  // use TF32 on Ampere and later); the workspace query then tells whether the algorithm supports it.
  auto math_for = [&](cudnnMathType_t reported) { return exact ? CUDNN_FMA_MATH : reported; };
  // Candidates in the heuristics' order; the first that works within the budget wins.
  auto choose = [&](const auto& results, int returned, auto workspace_of) {
    for (int i = 0; i < returned; ++i) {
      const auto& r = results[size_t(i)];
      if (r.status != CUDNN_STATUS_SUCCESS || !allowed(r.mathType)) continue;
      SB_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv_desc, math_for(r.mathType)));
      size_t bytes = 0;
      if (workspace_of(static_cast<int>(r.algo), &bytes) != CUDNN_STATUS_SUCCESS || bytes > budget) continue;
      s.algo = static_cast<int>(r.algo), s.math = math_for(r.mathType), s.library_bytes = bytes;
      return;
    }
  };
  int count = 0, returned = 0;
  switch (pass) {
    case ConvPass::kForward: {
      SB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(s.handle, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(count));
      SB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(s.handle, s.x_desc, s.w_desc, s.conv_desc, s.y_desc, count,
                                                            &returned, results.data()));
      choose(results, returned, [&](int algo, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(s.handle, s.x_desc, s.w_desc, s.conv_desc, s.y_desc,
                                                       cudnnConvolutionFwdAlgo_t(algo), bytes);
      });
      break;
    }
    case ConvPass::kBackwardData: {
      SB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(s.handle, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(static_cast<size_t>(count));
      SB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(s.handle, s.w_desc, s.y_desc, s.conv_desc, s.x_desc,
                                                                 count, &returned, results.data()));
      choose(results, returned, [&](int algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(s.handle, s.w_desc, s.y_desc, s.conv_desc, s.x_desc,
                                                            cudnnConvolutionBwdDataAlgo_t(algo), bytes);
      });
      break;
    }
    case ConvPass::kBackwardFilter: {
      SB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(s.handle, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(static_cast<size_t>(count));
      SB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(s.handle, s.x_desc, s.y_desc, s.conv_desc,
                                                                   s.w_desc, count, &returned, results.data()));
      choose(results, returned, [&](int algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(s.handle, s.x_desc, s.y_desc, s.conv_desc, s.w_desc,
                                                              cudnnConvolutionBwdFilterAlgo_t(algo), bytes);
      });
      break;
    }
  }
  // The backend plan, when one finalizes; its failure to build for a geometry is not an error (legacy remains).
  try {
    if (backend_plans_enabled()) {
      s.plan = CudnnConvPlan::build(s.handle, seen, in.padded_h, in.padded_w, sym_h, sym_w, dtype, exact, pass, budget);
    }
  } catch (const std::exception&) {
    s.plan = nullptr;
  }
  if (s.algo < 0 && s.plan == nullptr) {
    throw UsageError("conv2d: cuDNN offers no algorithm for this " + std::string(dtype_name(dtype)) +
                     " convolution within " + std::to_string(budget) + " bytes of workspace");
  }
  if (s.algo >= 0) SB_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv_desc, s.math));
}

Conv2dRunner::~Conv2dRunner() = default;

std::string Conv2dRunner::algorithm() const {
  if (state_->depthwise) {
    return state_->pass == ConvPass::kBackwardFilter
               ? "scalebench depthwise, " + std::to_string(state_->filter_blocks) + " blocks of partials"
               : "scalebench depthwise";
  }
  const std::string padded = state_->filter_copy_bytes > 0
                                 ? ", channels padded " + std::to_string(state_->input_window.c) + " -> " +
                                       std::to_string(state_->input_window.padded_c)
                                 : "";
  if (state_->plan != nullptr) return state_->plan->engine() + padded;
  return "algo " + std::to_string(state_->algo) + " math " + math_name(state_->math) + padded;
}

uint64_t Conv2dRunner::library_workspace() const {
  return state_->plan != nullptr ? state_->plan->workspace_bytes() : state_->library_bytes;
}

void Conv2dRunner::run(const void* first, const void* second, void* out, void* workspace, cudaStream_t stream) const {
  const State& s = *state_;
  if (s.depthwise) {
    auto run_as = [&](auto element) {
      run_depthwise<decltype(element)>(s.pass, s.g, s.filter_blocks, first, second, out, workspace, stream);
    };
    switch (s.dtype) {
      case DType::kFloat32: return run_as(float{});
      case DType::kBFloat16: return run_as(bf16{});
      default: return run_as(fp16{});
    }
  }
  SB_CUDNN_CHECK(cudnnSetStream(s.handle, stream));
  const float one = 1.0f, zero = 0.0f;  // float scaling factors: the compute type is fp32 for every dtype
  unsigned char* front = static_cast<unsigned char*>(workspace);
  void* input_copy = s.input_copy_bytes > 0 ? front : nullptr;
  void* filter_copy = s.filter_copy_bytes > 0 ? front + s.input_copy_bytes : nullptr;
  void* library = front + s.padded_bytes;
  // x (or w) copied into its padded buffer; returns what cuDNN reads.
  auto input_seen = [&](const void* x) -> const void* {
    if (input_copy == nullptr) return x;
    pad_as(s.dtype, x, input_copy, s.input_window, stream);
    return input_copy;
  };
  auto filter_seen = [&](const void* w) -> const void* {
    if (filter_copy == nullptr) return w;
    pad_as(s.dtype, w, filter_copy, s.filter_window, stream);
    return filter_copy;
  };
  // The plan declares kCudnnPlanAlignment-byte aligned tensors; anything less takes the legacy call (and a
  // legacy algorithm must exist: the constructor may have found only the plan).
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kCudnnPlanAlignment == 0; };
  auto use_plan = [&](const void* a, const void* b, const void* c) {
    const bool plan = s.plan != nullptr && aligned(a) && aligned(b) && aligned(c) && aligned(library);
    if (!plan && s.algo < 0) throw UsageError("conv2d: pointers not aligned for the only cuDNN plan found");
    return plan;
  };
  switch (s.pass) {
    case ConvPass::kForward: {
      const void* x = input_seen(first);
      const void* w = filter_seen(second);
      if (use_plan(x, w, out)) return s.plan->execute(s.handle, x, w, out, library);
      SB_CUDNN_CHECK(cudnnConvolutionForward(s.handle, &one, s.x_desc, x, s.w_desc, w, s.conv_desc,
                                             cudnnConvolutionFwdAlgo_t(s.algo), library, s.library_bytes, &zero,
                                             s.y_desc, out));
      return;
    }
    case ConvPass::kBackwardData: {
      const void* w = filter_seen(second);
      void* dx = input_copy != nullptr ? input_copy : out;
      if (use_plan(first, w, dx)) {
        s.plan->execute(s.handle, first, w, dx, library);
      } else {
        SB_CUDNN_CHECK(cudnnConvolutionBackwardData(s.handle, &one, s.w_desc, w, s.y_desc, first, s.conv_desc,
                                                    cudnnConvolutionBwdDataAlgo_t(s.algo), library, s.library_bytes,
                                                    &zero, s.x_desc, dx));
      }
      if (input_copy != nullptr) crop_as(s.dtype, input_copy, out, s.input_window, stream);
      return;
    }
    case ConvPass::kBackwardFilter: {
      const void* x = input_seen(first);
      void* dw = filter_copy != nullptr ? filter_copy : out;
      if (use_plan(x, second, dw)) {
        s.plan->execute(s.handle, x, second, dw, library);
      } else {
        SB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(s.handle, &one, s.x_desc, x, s.y_desc, second, s.conv_desc,
                                                      cudnnConvolutionBwdFilterAlgo_t(s.algo), library,
                                                      s.library_bytes, &zero, s.w_desc, dw));
      }
      if (filter_copy != nullptr) crop_as(s.dtype, filter_copy, out, s.filter_window, stream);
      return;
    }
  }
}

}  // namespace sb::cuda
