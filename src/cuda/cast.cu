// Element-type conversion kernel (cast.h): grid-stride, 8 elements per thread step when both pointers are
// 16-byte aligned (one 16-byte access of bf16/fp16, two of float), a scalar loop for the n % 8 tail and for
// misaligned pointers. 256 threads per block, at most one full wave. Memory-bound: 6 bytes per element.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cast.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWidth = 8;  // elements per vector step: 16 bytes of bf16 or fp16, 32 bytes (two accesses) of float

template <typename T>
using Vector = Pack<T, kWidth>;  // one or two 16-byte accesses

template <typename From, typename To, bool kVector>
__global__ void cast_kernel(const From* __restrict__ x, To* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if constexpr (kVector) {
    const int64_t vectors = n / kWidth;
    const Vector<From>* xv = reinterpret_cast<const Vector<From>*>(x);
    Vector<To>* yv = reinterpret_cast<Vector<To>*>(y);
    for (int64_t v = thread; v < vectors; v += stride) {
      const Vector<From> in = xv[v];
      Vector<To> out;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) out.element[j] = from_float<To>(to_float(in.element[j]));
      yv[v] = out;
    }
    scalar_from = vectors * kWidth;
  }
  for (int64_t i = scalar_from + thread; i < n; i += stride) y[i] = from_float<To>(to_float(x[i]));
}

}  // namespace

template <typename From, typename To>
void cast(const From* x, To* y, int64_t n, cudaStream_t stream) {
  if (n < 0) throw UsageError("cuda::cast: negative element count " + std::to_string(n));
  if (n == 0) return;
  SB_CHECK(x && y, "cuda::cast: null pointer");
  if (detail::aligned_16(x) && detail::aligned_16(y)) {
    cast_kernel<From, To, true><<<detail::grid_stride_blocks((n + kWidth - 1) / kWidth, kThreads), kThreads, 0,
                                  stream>>>(x, y, n);
  } else {
    cast_kernel<From, To, false><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, y, n);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template void cast<float, bf16>(const float*, bf16*, int64_t, cudaStream_t);
template void cast<bf16, float>(const bf16*, float*, int64_t, cudaStream_t);
template void cast<float, fp16>(const float*, fp16*, int64_t, cudaStream_t);
template void cast<fp16, float>(const fp16*, float*, int64_t, cudaStream_t);

}  // namespace sb::cuda

// The cast family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
namespace {

void run_cast(CudaExecutor& e, const Node& n) {
  const DType from = dtype_of(e, n.inputs[0]), to = dtype_of(e, n.outputs[0]);
  const int64_t count = size_attr(n, "n");
  if (from == to) return copy(e, n.outputs[0], n.inputs[0]);
  if (from == DType::kFloat32 && to == DType::kBFloat16) {
    return cuda::cast(e.at<float>(n.inputs[0]), e.at<cuda::bf16>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kBFloat16 && to == DType::kFloat32) {
    return cuda::cast(e.at<cuda::bf16>(n.inputs[0]), e.at<float>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kFloat32 && to == DType::kFloat16) {
    return cuda::cast(e.at<float>(n.inputs[0]), e.at<cuda::fp16>(n.outputs[0]), count, e.stream());
  }
  if (from == DType::kFloat16 && to == DType::kFloat32) {
    return cuda::cast(e.at<cuda::fp16>(n.inputs[0]), e.at<float>(n.outputs[0]), count, e.stream());
  }
  throw UsageError(std::string("cast: no kernel from ") + dtype_name(from) + " to " + dtype_name(to));
}

}  // namespace

void bind_cast_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"cast", run_cast},
  });
}

}  // namespace sb::cuda_binding
