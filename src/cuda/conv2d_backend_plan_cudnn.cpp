// CudnnConvPlan (conv2d_backend_plan.h; built only with cuDNN): tensor, convolution and operation descriptors
// of cuDNN's backend API, an operation graph of that one operation, the engine configurations heuristics mode A
// ranks, and the first that finalizes as an execution plan within the workspace budget, cached per shape.
// Tensors are NHWC (strides over the logical N, C, H, W dimensions); the filter is K, C / groups, R, S with
// its channels innermost.
#include "src/cuda/conv2d_backend_plan.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "scalebench/error.h"
#include "src/cuda/cudnn_check.h"

namespace sb::cuda {

struct CudnnPlanCore {
  cudnnBackendDescriptor_t plan = nullptr;
  std::vector<cudnnBackendDescriptor_t> kept;  // the tensors, operation, graph and engine config it refers to
  int64_t uids[3] = {0, 0, 0};                 // the uids of the run order's three tensors
  uint64_t workspace_bytes = 0;
  int64_t engine_index = -1;
  CudnnPlanCore() = default;
  CudnnPlanCore(const CudnnPlanCore&) = delete;
  CudnnPlanCore& operator=(const CudnnPlanCore&) = delete;
  ~CudnnPlanCore() {
    if (plan != nullptr) cudnnBackendDestroyDescriptor(plan);
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
  }
};

namespace {

// Owns one backend descriptor.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) { SB_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  ~Descriptor() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t release() {
    cudnnBackendDescriptor_t d = d_;
    d_ = nullptr;
    return d;
  }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    SB_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
  }
  void set(cudnnBackendAttributeName_t name, const Descriptor& other) {
    cudnnBackendDescriptor_t value = other.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  void finalize() { SB_CUDNN_CHECK(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

cudnnDataType_t backend_data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDNN_DATA_FLOAT;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::kFloat16: return CUDNN_DATA_HALF;
    default: throw UsageError(std::string("conv2d: no cuDNN convolution for ") + dtype_name(dtype) + " tensors");
  }
}

// An NHWC tensor of logical extent (n, c, h, w): channels innermost.
void describe_nhwc(Descriptor& t, int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t type) {
  const int64_t dims[4] = {n, c, h, w};
  const int64_t strides[4] = {h * w * c, 1, w * c, c};
  const int64_t alignment = static_cast<int64_t>(kCudnnPlanAlignment);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  t.finalize();
}

// The engine's notes allow it: never down-converted inputs; for exact fp32, no tensor cores (TF32); never
// compiled at run time.
bool allowed_engine(cudnnBackendDescriptor_t engine, bool exact_fp32) {
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (exact_fp32 && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return false;
  }
  // Engines compiled at run time cost about a second each to finalize; over a network of a few hundred shapes
  // that is minutes before the first step (nasnet_large did not start within 90 s on an H200 with them).
  cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, behaviour) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (behaviour[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  }
  return true;
}

}  // namespace

// The plan and operation-graph handle attributes are deprecated from cuDNN 9.x on but still required by the
// 9.x releases before; setting them is harmless on the later ones.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
namespace {

std::shared_ptr<const CudnnPlanCore> build_core(cudnnHandle_t handle, const Conv2dGeometry& g, int64_t padded_h,
                                                int64_t padded_w, int64_t pad_h, int64_t pad_w, DType dtype,
                                                bool exact_fp32, ConvPass pass, uint64_t workspace_budget) {
  const cudnnDataType_t type = backend_data_type(dtype);
  Descriptor x(CUDNN_BACKEND_TENSOR_DESCRIPTOR), w(CUDNN_BACKEND_TENSOR_DESCRIPTOR), y(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  describe_nhwc(x, kUidX, g.batch, g.in_c, padded_h, padded_w, type);
  describe_nhwc(w, kUidW, g.out_c, g.in_per_group(), g.kernel_h, g.kernel_w, type);
  describe_nhwc(y, kUidY, g.batch, g.out_c, g.out_h, g.out_w, type);

  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // fp32 accumulation for every storage type
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2, dilations[2] = {g.dilation_h, g.dilation_w}, strides[2] = {g.stride_h, g.stride_w};
  const int64_t paddings[2] = {pad_h, pad_w};
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, paddings);
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, paddings);
  conv.finalize();

  const float alpha = 1.0f, beta = 0.0f;
  auto result = std::make_shared<CudnnPlanCore>();
  std::unique_ptr<Descriptor> operation;
  switch (pass) {
    case ConvPass::kForward:
      operation = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      result->uids[0] = kUidX, result->uids[1] = kUidW, result->uids[2] = kUidY;
      break;
    case ConvPass::kBackwardData:
      operation = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      result->uids[0] = kUidY, result->uids[1] = kUidW, result->uids[2] = kUidX;
      break;
    case ConvPass::kBackwardFilter:
      operation = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      operation->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      result->uids[0] = kUidX, result->uids[1] = kUidY, result->uids[2] = kUidW;
      break;
  }
  operation->finalize();

  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, *operation);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  graph.finalize();

  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
  heuristics.finalize();
  int64_t offered = 0;
  SB_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &offered, nullptr));
  std::vector<std::unique_ptr<Descriptor>> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < offered; ++i) {
    configs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t returned = 0;
  if (offered > 0) {
    SB_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, offered, &returned, raw.data()));
  }

  // Heuristics' order; the first allowed engine that finalizes within the budget wins.
  for (int64_t i = 0; i < returned; ++i) {
    Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t engine_raw = engine.get();
    int64_t got = 0;
    if (cudnnBackendGetAttribute(raw[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                 &engine_raw) != CUDNN_STATUS_SUCCESS ||
        !allowed_engine(engine_raw, exact_fp32)) {
      continue;
    }
    Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[size_t(i)]);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t workspace = 0;
    SB_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                            &got, &workspace));
    if (workspace < 0 || static_cast<uint64_t>(workspace) > workspace_budget) continue;
    int64_t index = -1;
    cudnnBackendGetAttribute(engine_raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &index);
    result->workspace_bytes = static_cast<uint64_t>(workspace);
    result->engine_index = index;
    result->plan = plan.release();
    // What the plan refers to lives as long as the plan (cuDNN's frontend keeps them alike).
    for (Descriptor* kept : {&x, &w, &y, &conv, operation.get(), &graph, &heuristics, configs[size_t(i)].get()}) {
      result->kept.push_back(kept->release());
    }
    return result;
  }
  return nullptr;
}
#pragma GCC diagnostic pop

}  // namespace

std::unique_ptr<CudnnConvPlan> CudnnConvPlan::build(cudnnHandle_t handle, const Conv2dGeometry& g, int64_t padded_h,
                                                    int64_t padded_w, int64_t pad_h, int64_t pad_w, DType dtype,
                                                    bool exact_fp32, ConvPass pass, uint64_t workspace_budget) {
  if (g.groups != 1) return nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, int, uint64_t>;
  const Key key{device,   g.batch,    g.in_c,       g.out_c,      g.out_h,  g.out_w, g.kernel_h,
                g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, padded_h, padded_w,
                pad_h,    pad_w,      g.groups,     int(dtype),   exact_fp32, int(pass), workspace_budget};
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const CudnnPlanCore>> cache;  // null entries: no engine, asked once
  std::shared_ptr<const CudnnPlanCore> core;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      core = it->second;
    } else {
      core = build_core(handle, g, padded_h, padded_w, pad_h, pad_w, dtype, exact_fp32, pass, workspace_budget);
      cache.emplace(key, core);
    }
  }
  if (core == nullptr) return nullptr;
  return std::unique_ptr<CudnnConvPlan>(new CudnnConvPlan(core));
}

CudnnConvPlan::~CudnnConvPlan() {
  if (variant_pack_ != nullptr) cudnnBackendDestroyDescriptor(variant_pack_);
}

uint64_t CudnnConvPlan::workspace_bytes() const { return core_->workspace_bytes; }

std::string CudnnConvPlan::engine() const { return "backend engine " + std::to_string(core_->engine_index); }

void CudnnConvPlan::execute(cudnnHandle_t handle, const void* first, const void* second, void* out,
                            void* workspace) {
  const void* pointers[4] = {first, second, out, workspace};
  bool same = variant_pack_ != nullptr;
  for (int i = 0; i < 4 && same; ++i) same = pointers[i] == pointers_[i];
  if (!same) {  // the executor's pointers are fixed per node, so this runs once per node
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* data[3] = {const_cast<void*>(first), const_cast<void*>(second), out};
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, core_->uids);
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize();
    if (variant_pack_ != nullptr) cudnnBackendDestroyDescriptor(variant_pack_);
    variant_pack_ = pack.release();
    for (int i = 0; i < 4; ++i) pointers_[i] = pointers[i];
  }
  SB_CUDNN_CHECK(cudnnBackendExecute(handle, core_->plan, variant_pack_));
}

}  // namespace sb::cuda
