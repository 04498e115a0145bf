// CUDA GEMM (src/cuda/gemm.h) through cuBLASLt, fp32 in and out with CUBLAS_COMPUTE_32F (plain fp32 FMA,
// no TF32), so it is compared with the CPU at fp32 tolerance.
//
// Row-major to column-major: a row-major (r, c) matrix with leading dimension ld is, read column-major, its
// transpose (c, r) with the same ld. So the row-major C = op(A) op(B) is computed as the column-major
// Cᵀ (n, m) = op(B)ᵀ (n, k) · op(A)ᵀ (k, m): cuBLASLt's first operand is our B, its second our A, its M and N
// are our n and m, and each transpose flag stays with its own matrix (B stored (k, n) row-major is already
// op(B)ᵀ column-major, so "no transpose" stays "no transpose").
//
// k == 0 (C = beta C) is a small kernel here, not a cuBLASLt call. Strided batches are one cuBLASLt call
// (stride 0 broadcasts an operand); should the heuristic find no batched algorithm for a layout, the batch
// runs as one call per entry instead.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "scalebench/error.h"
#include "src/cuda/bias.h"
#include "src/cuda/cublas_check.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/gemm.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

// cuBLASLt's faster kernels (split-K among them) need device scratch, and without one the heuristic offers
// only kernels that need none. 32 MiB is NVIDIA's recommended cuBLAS workspace for Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kThreads = 256;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// ---------------------------------------------------------------- k == 0: C = beta C

// Every element of every batch entry's C (m, n); beta == 0 writes 0 without reading C (BLAS semantics).
template <typename C>
__global__ void scale_c_kernel(C* c, int64_t m, int64_t n, int64_t ldc, int64_t batch, int64_t stride_c,
                               float beta) {
  const int64_t per_matrix = m * n;
  const int64_t total = per_matrix * batch;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t g = i / per_matrix;
    const int64_t within = i - g * per_matrix;
    C* element = c + g * stride_c + (within / n) * ldc + within % n;
    *element = from_float<C>(beta == 0.0f ? 0.0f : beta * to_float(*element));
  }
}

// ---------------------------------------------------------------- cuBLASLt state

// One handle per (thread, device), created on first use: a handle is library state that threads must not
// share while issuing concurrently, and a per-thread handle needs no lock on the hot path. Destroyed at
// thread exit (before the runtime's own teardown at process exit); the status is ignored there.
struct ThreadHandles {
  std::vector<cublasLtHandle_t> by_device;
  ~ThreadHandles() {
    for (cublasLtHandle_t handle : by_device) {
      if (handle != nullptr) cublasLtDestroy(handle);
    }
  }
};

cublasLtHandle_t thread_handle(int device) {
  thread_local ThreadHandles handles;
  if (device >= static_cast<int>(handles.by_device.size())) handles.by_device.resize(device + 1, nullptr);
  cublasLtHandle_t& handle = handles.by_device[device];
  if (handle == nullptr) SB_CUBLAS_CHECK(cublasLtCreate(&handle));
  return handle;
}

// One workspace per (device, stream), cudaMalloc'd on first use and kept for the life of the process (the
// driver frees it at exit; freeing from a static destructor would race the runtime's teardown). Work on one
// stream runs in order, so consecutive GEMMs there can reuse it; GEMMs on two streams may overlap, and a
// shared workspace would let one overwrite the other's split-K partials, hence the stream in the key.
// The first GEMM on a stream must come before any graph capture on it (warmup does this): cudaMalloc is
// not allowed while a stream is being captured.
// An executor brings its own (lend_gemm_workspace): it owns the memory, counted in its budget, and frees it
// with its stream, instead of leaving 32 MiB behind for every stream a process ever used.
std::mutex workspaces_mutex;
std::map<std::pair<int, cudaStream_t>, void*>& workspaces() {
  static auto* map = new std::map<std::pair<int, cudaStream_t>, void*>();  // intentionally leaked
  return *map;
}

void* stream_workspace(int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(workspaces_mutex);
  void*& workspace = workspaces()[{device, stream}];
  if (workspace == nullptr) SB_CUDA_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));
  return workspace;
}

// The largest power of two <= 256 dividing the address of every batch entry's operand: cuBLASLt's heuristic
// assumes 256-byte aligned operands unless told otherwise, and our operands are views into flat buffers.
uint32_t operand_alignment(const void* pointer, size_t element_bytes, int64_t batch, int64_t stride) {
  uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer));
  if (batch > 1) bits |= static_cast<uint64_t>(stride) * element_bytes;
  uint32_t alignment = 256;
  while (alignment > 1 && bits % alignment != 0) alignment /= 2;
  return alignment;
}

struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDesc_t desc) const { cublasLtMatmulDescDestroy(desc); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayout_t layout) const { cublasLtMatrixLayoutDestroy(layout); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t preference) const { cublasLtMatmulPreferenceDestroy(preference); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, MatmulDescDeleter>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LayoutDeleter>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>;

// A column-major layout of `type` (rows, cols, ld), batched when batch > 1.
Layout make_layout(cudaDataType type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  Layout layout(raw);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t offset = stride;
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                     sizeof(count)));
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                                     sizeof(offset)));
  }
  return layout;
}

template <typename T>
cudaDataType data_type();
template <>
cudaDataType data_type<float>() { return CUDA_R_32F; }
template <>
cudaDataType data_type<bf16>() { return CUDA_R_16BF; }
template <>
cudaDataType data_type<fp16>() { return CUDA_R_16F; }

size_t element_bytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

// One row-major problem after the checks (m, n, k > 0, batch >= 1). A and B share one element type; C may
// be wider (bf16 or fp16 operands, fp32 result: weight gradients of mixed precision).
struct Problem {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  float alpha;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  float beta;
  void* c;
  int64_t ldc;
  int64_t batch, stride_a, stride_b, stride_c;
  cudaDataType ab_type, c_type;
  const void* bias = nullptr;  // (n) of C's type, added to every row of C by the epilogue; batch 1 only
};

thread_local GemmMath gemm_math = GemmMath::kFp32;

// The heuristic's choice for a shape, layout and alignment, cached per thread (the query costs tens of
// microseconds of host time, a GEMM of a small layer about as much). found == false is cached too.
struct PlanKey {
  int device;
  int math, ab_type, c_type;
  bool bias;
  bool transpose_a, transpose_b;
  int64_t m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
  uint32_t align_a, align_b, align_c;
  auto tied() const {
    return std::tie(device, math, ab_type, c_type, bias, transpose_a, transpose_b, m, n, k, lda, ldb, ldc, batch, stride_a, stride_b,
                    stride_c, align_a, align_b, align_c);
  }
  bool operator<(const PlanKey& other) const { return tied() < other.tied(); }
};
struct Plan {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};

// Runs the problem as one cuBLASLt call; false (nothing queued) when the heuristic has no algorithm for it.
bool run_matmul(const Problem& p, cudaStream_t stream) {
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  const cublasLtHandle_t handle = thread_handle(device);
  const bool batched = p.batch > 1;

  // cuBLASLt operand 1 is our B, operand 2 our A (see the header comment); D is C, in place.
  MatmulDesc desc;
  {
    cublasLtMatmulDesc_t raw = nullptr;
    // TF32 applies to fp32 operands only; bf16 and fp16 operands always multiply on tensor cores, accumulating
    // in fp32 (CUBLAS_COMPUTE_32F, as PyTorch's default for half: no fp16 accumulation).
    const cublasComputeType_t compute = gemm_math == GemmMath::kTf32 && p.ab_type == CUDA_R_32F
                                            ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
    SB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw, compute, CUDA_R_32F));
    desc.reset(raw);
  }
  const cublasOperation_t op_first = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  SB_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  SB_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  if (p.bias != nullptr) {
    // Column-major D is our Cᵀ (n, m): a bias of length n is one value per row of D, broadcast along its
    // columns, which is what the BIAS epilogue does. The bias has D's type (cuBLASLt refuses an fp32 bias
    // with a bf16 D: CUBLAS_STATUS_INVALID_VALUE on H200, CUDA 13.0).
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType bias_type = p.c_type;
    SB_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    SB_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)));
    SB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                   sizeof(bias_type)));
  }
  // Stored shapes, column-major: B is (n, k) untransposed / (k, n) transposed; A is (k, m) / (m, k).
  const Layout first = p.transpose_b ? make_layout(p.ab_type, p.k, p.n, p.ldb, p.batch, p.stride_b)
                                     : make_layout(p.ab_type, p.n, p.k, p.ldb, p.batch, p.stride_b);
  const Layout second = p.transpose_a ? make_layout(p.ab_type, p.m, p.k, p.lda, p.batch, p.stride_a)
                                      : make_layout(p.ab_type, p.k, p.m, p.lda, p.batch, p.stride_a);
  const Layout result = make_layout(p.c_type, p.n, p.m, p.ldc, p.batch, p.stride_c);

  const size_t ab_bytes = element_bytes(p.ab_type), c_bytes = element_bytes(p.c_type);
  PlanKey key{device,   static_cast<int>(gemm_math), static_cast<int>(p.ab_type), static_cast<int>(p.c_type),
              p.bias != nullptr, p.transpose_a, p.transpose_b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch,
              batched ? p.stride_a : 0, batched ? p.stride_b : 0, batched ? p.stride_c : 0,
              operand_alignment(p.a, ab_bytes, p.batch, p.stride_a), operand_alignment(p.b, ab_bytes, p.batch, p.stride_b),
              operand_alignment(p.c, c_bytes, p.batch, p.stride_c)};
  thread_local std::map<PlanKey, Plan> plans;
  auto cached = plans.find(key);
  if (cached == plans.end()) {
    Preference preference;
    {
      cublasLtMatmulPreference_t raw = nullptr;
      SB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw));
      preference.reset(raw);
    }
    const uint64_t workspace_bytes = kWorkspaceBytes;
    SB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof(workspace_bytes)));
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c}};
    for (const auto& [attribute, bytes] : alignments) {
      SB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference.get(), attribute, &bytes, sizeof(bytes)));
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), first.get(), second.get(),
                                                                 result.get(), result.get(), preference.get(), 1,
                                                                 &heuristic, &returned);
    const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || (p.bias != nullptr && status == CUBLAS_STATUS_INVALID_VALUE);
    if (status != CUBLAS_STATUS_SUCCESS && !refused) {
      SB_FATAL("cublasLtMatmulAlgoGetHeuristic -> " + ::sb::detail::cublas_status_text(status));
    }
    Plan plan;
    plan.found = status == CUBLAS_STATUS_SUCCESS && returned > 0 && heuristic.state == CUBLAS_STATUS_SUCCESS;
    if (plan.found) plan.algo = heuristic.algo;
    cached = plans.emplace(key, plan).first;
  }
  if (!cached->second.found) return false;

  void* workspace = stream_workspace(device, stream);
  SB_CUBLAS_CHECK(cublasLtMatmul(handle, desc.get(), &p.alpha, p.b, first.get(), p.a, second.get(), &p.beta, p.c,
                                 result.get(), p.c, result.get(), &cached->second.algo, workspace, kWorkspaceBytes,
                                 stream));
  return true;
}

std::string describe(const Problem& p) {
  return std::string("cuda::gemm: no cuBLASLt algorithm for ") + (p.transpose_a ? "T" : "N") +
         (p.transpose_b ? "T" : "N") + " m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
         " k=" + std::to_string(p.k) + " lda=" + std::to_string(p.lda) + " ldb=" + std::to_string(p.ldb) +
         " ldc=" + std::to_string(p.ldc) + " batch=" + std::to_string(p.batch);
}

void require(bool condition, const std::string& what) {
  if (!condition) throw UsageError("cuda::gemm: " + what);
}

// The CPU's checks (src/cpu/gemm.cpp), plus cuBLASLt's 32-bit limits on sizes and batch count.
void check_shape(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                 int64_t ldc) {
  require(m >= 0 && n >= 0 && k >= 0,
          "negative size m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  require(m <= kInt32Max && n <= kInt32Max && k <= kInt32Max,
          "size beyond 2^31 - 1: m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const int64_t a_cols = transpose_a ? m : k;  // columns of A as stored
  const int64_t b_cols = transpose_b ? k : n;
  require(lda >= (a_cols > 1 ? a_cols : 1), "lda " + std::to_string(lda) + " < " + std::to_string(a_cols));
  require(ldb >= (b_cols > 1 ? b_cols : 1), "ldb " + std::to_string(ldb) + " < " + std::to_string(b_cols));
  require(ldc >= (n > 1 ? n : 1), "ldc " + std::to_string(ldc) + " < " + std::to_string(n));
}

template <typename C>
void scale_c(const Problem& p, cudaStream_t stream) {
  const int64_t total = p.m * p.n * p.batch;
  scale_c_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      static_cast<C*>(p.c), p.m, p.n, p.ldc, p.batch, p.stride_c, p.beta);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, cudaStream_t stream) {
  gemm_strided_batched(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 1, 0, 0, 0, stream);
}

template <typename AB, typename C>
void gemm_strided_batched(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const AB* a, int64_t lda, const AB* b, int64_t ldb, float beta, C* c, int64_t ldc,
                          int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c, cudaStream_t stream,
                          const C* bias) {
  check_shape(transpose_a, transpose_b, m, n, k, lda, ldb, ldc);
  require(batch >= 0, "negative batch " + std::to_string(batch));
  require(batch <= kInt32Max, "batch " + std::to_string(batch) + " beyond 2^31 - 1");
  require(stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "negative stride");
  require(batch <= 1 || m == 0 || n == 0 || stride_c >= (m - 1) * ldc + n,
          "stride_c " + std::to_string(stride_c) + " makes the C matrices of the batch overlap");
  require(bias == nullptr || (batch <= 1 && beta == 0.0f && ldc == n), "a bias needs batch 1, beta 0 and ldc == n");
  if (m == 0 || n == 0 || batch == 0) return;
  const cudaDataType ab_type = data_type<AB>(), c_type = data_type<C>();
  const Problem problem{transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                        batch, batch > 1 ? stride_a : 0, batch > 1 ? stride_b : 0, batch > 1 ? stride_c : 0,
                        ab_type, c_type, bias};
  if (bias != nullptr) {
    // The epilogue saves a pass over C; without an algorithm for it (or at k == 0), an fp32 bias gets a
    // separate kernel. A bf16 or fp16 bias has none: cuBLASLt has 16-bit bias epilogues for every layout we use.
    if (k > 0 && detail::aligned_16(bias) && run_matmul(problem, stream)) return;
    if constexpr (std::is_same_v<C, float>) {
      Problem plain = problem;
      plain.bias = nullptr;
      if (k == 0) {
        scale_c<C>(plain, stream);
      } else if (!run_matmul(plain, stream)) {
        SB_FATAL(describe(plain));
      }
      return bias_add_forward(c, bias, m, n, stream);
    } else {
      SB_FATAL(describe(problem) + " with a 16-bit bias epilogue");
    }
  }
  if (k == 0) return scale_c<C>(problem, stream);
  if (run_matmul(problem, stream)) return;
  if (batch == 1) SB_FATAL(describe(problem));
  // No batched algorithm for this layout (not expected on sm_90): one call per entry, same results.
  for (int64_t g = 0; g < batch; ++g) {
    const Problem entry{transpose_a, transpose_b, m, n, k, alpha, a + g * stride_a, lda, b + g * stride_b, ldb,
                        beta, c + g * stride_c, ldc, 1, 0, 0, 0, ab_type, c_type};
    if (!run_matmul(entry, stream)) SB_FATAL(describe(entry));
  }
}

#define SB_GEMM(AB, C)                                                                                        \
  template void gemm_strided_batched<AB, C>(bool, bool, int64_t, int64_t, int64_t, float, const AB*, int64_t, \
                                            const AB*, int64_t, float, C*, int64_t, int64_t, int64_t, int64_t, \
                                            int64_t, cudaStream_t, const C*);
SB_GEMM(float, float)
SB_GEMM(bf16, bf16)
SB_GEMM(bf16, float)
SB_GEMM(fp16, fp16)
SB_GEMM(fp16, float)
#undef SB_GEMM

void set_gemm_math(GemmMath math) { gemm_math = math; }

uint64_t gemm_workspace_bytes() { return kWorkspaceBytes; }

void lend_gemm_workspace(cudaStream_t stream, void* workspace) {
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(workspaces_mutex);
  workspaces()[{device, stream}] = workspace;
}

void take_back_gemm_workspace(cudaStream_t stream) {
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(workspaces_mutex);
  workspaces().erase({device, stream});
}

}  // namespace sb::cuda

// The gemm family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
namespace {

// A and B share the compute dtype; C is the same or, for weight gradients under mixed precision, fp32.
void run_gemm(CudaExecutor& e, const Node& n) {
  const bool ta = size_attr(n, "transpose_a") != 0, tb = size_attr(n, "transpose_b") != 0;
  const int64_t m = size_attr(n, "m"), cols = size_attr(n, "n"), k = size_attr(n, "k");
  const DType operands = dtype_of(e, n.inputs[0]), result = dtype_of(e, n.outputs[0]);
  if (dtype_of(e, n.inputs[1]) != operands) throw UsageError("gemm: operands of different dtypes");
  // A bias (linear layers) has the result's dtype and is fused into the GEMM's epilogue.
  const bool has_bias = n.inputs.size() > 2;
  if (has_bias && dtype_of(e, n.inputs[2]) != result) throw UsageError("gemm: the bias must have the result's dtype");
  auto launch = [&](auto* a, auto* b, auto* c) {
    using C = std::remove_pointer_t<decltype(c)>;
    cuda::gemm_strided_batched(ta, tb, m, cols, k, float_attr(n, "alpha"), a, ta ? m : k, b, tb ? k : cols, 0.0f, c,
                               cols, size_attr(n, "batch"), m * k, k * cols, m * cols, e.stream(),
                               has_bias ? e.at<C>(n.inputs[2]) : nullptr);
  };
  if (operands == DType::kFloat32 && result == DType::kFloat32) {
    launch(e.at<float>(n.inputs[0]), e.at<float>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else if (operands == DType::kBFloat16 && result == DType::kBFloat16) {
    launch(e.at<cuda::bf16>(n.inputs[0]), e.at<cuda::bf16>(n.inputs[1]), e.at<cuda::bf16>(n.outputs[0]));
  } else if (operands == DType::kBFloat16 && result == DType::kFloat32) {
    launch(e.at<cuda::bf16>(n.inputs[0]), e.at<cuda::bf16>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else if (operands == DType::kFloat16 && result == DType::kFloat16) {
    launch(e.at<cuda::fp16>(n.inputs[0]), e.at<cuda::fp16>(n.inputs[1]), e.at<cuda::fp16>(n.outputs[0]));
  } else if (operands == DType::kFloat16 && result == DType::kFloat32) {
    launch(e.at<cuda::fp16>(n.inputs[0]), e.at<cuda::fp16>(n.inputs[1]), e.at<float>(n.outputs[0]));
  } else {
    throw UsageError(std::string("gemm: no kernel for ") + dtype_name(operands) + " operands and a " +
                     dtype_name(result) + " result");
  }
}

}  // namespace

void bind_gemm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"gemm", run_gemm},
  });
}

}  // namespace sb::cuda_binding
