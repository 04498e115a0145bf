// Broadcast add and middle-dimension swap (layout.h): grid-stride loops over the output, one 16-byte vector of
// T (4 floats or 8 bf16) per thread step when the innermost run (block, or d) is a multiple of that width and
// the pointers are 16-byte aligned; the broadcast's fp32 table then comes as the matching 16 or 32 bytes.
// The swap's writes are consecutive across a warp; its reads are consecutive within each run of d elements.
#include <cstdint>
#include <string>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/layout.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 16;  // fills an H200 (132 SMs); the loops stride the rest


// count and block are in units of N elements.
template <typename T, int N>
__global__ void add_broadcast_kernel(const Pack<T, N>* x, const Pack<float, N>* __restrict__ table, Pack<T, N>* y,
                                     int64_t count, int64_t block) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const Pack<T, N> v = x[i];
    const Pack<float, N> t = table[i % block];
    Pack<T, N> out;
#pragma unroll
    for (int j = 0; j < N; ++j) out.element[j] = from_float<T>(to_float(v.element[j]) + t.element[j]);
    y[i] = out;
  }
}

// Output index o of y (a, c, b, d) -> (i, k, j, e); read x (a, b, c, d) at (i, j, k, e). d in units of V, the
// element type or a 16-byte Pack of it (a copy: no conversion).
template <typename V>
__global__ void swap_middle_kernel(const V* __restrict__ x, V* __restrict__ y, int64_t count, int64_t b,
                                   int64_t c, int64_t d) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < count; o += stride) {
    const int64_t e = o % d;
    int64_t rest = o / d;
    const int64_t j = rest % b;
    rest /= b;
    const int64_t k = rest % c;
    const int64_t i = rest / c;
    y[o] = x[((i * b + j) * c + k) * d + e];
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

unsigned blocks_for(int64_t count) {
  const int64_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(needed < kMaxBlocks ? needed : kMaxBlocks);
}

}  // namespace

template <typename T>
void add_broadcast_forward(const T* x, const float* table, T* y, int64_t repeats, int64_t block,
                           cudaStream_t stream) {
  SB_CHECK(repeats >= 0 && block >= 0, "add_broadcast_forward: repeats and block must be >= 0");
  const int64_t count = repeats * block;
  if (count == 0) return;
  SB_CHECK(x && table && y, "add_broadcast_forward: null pointer");
  constexpr int kWidth = kElementsPer16Bytes<T>;
  using Vector = Pack<T, kWidth>;
  using Scalar = Pack<T, 1>;
  if (block % kWidth == 0 && aligned16(x) && aligned16(table) && aligned16(y)) {
    add_broadcast_kernel<T, kWidth><<<blocks_for(count / kWidth), kThreads, 0, stream>>>(
        reinterpret_cast<const Vector*>(x), reinterpret_cast<const Pack<float, kWidth>*>(table),
        reinterpret_cast<Vector*>(y), count / kWidth, block / kWidth);
  } else {
    add_broadcast_kernel<T, 1><<<blocks_for(count), kThreads, 0, stream>>>(
        reinterpret_cast<const Scalar*>(x), reinterpret_cast<const Pack<float, 1>*>(table),
        reinterpret_cast<Scalar*>(y), count, block);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void swap_middle(const T* x, T* y, int64_t a, int64_t b, int64_t c, int64_t d, cudaStream_t stream) {
  SB_CHECK(a >= 0 && b >= 0 && c >= 0 && d >= 0, "swap_middle: a, b, c and d must be >= 0");
  const int64_t count = a * b * c * d;
  if (count == 0) return;
  SB_CHECK(x && y, "swap_middle: null pointer");
  SB_CHECK(x != y, "swap_middle: y may not alias x");
  constexpr int kWidth = kElementsPer16Bytes<T>;
  using Vector = Pack<T, kWidth>;
  if (d % kWidth == 0 && aligned16(x) && aligned16(y)) {
    swap_middle_kernel<Vector><<<blocks_for(count / kWidth), kThreads, 0, stream>>>(
        reinterpret_cast<const Vector*>(x), reinterpret_cast<Vector*>(y), count / kWidth, b, c, d / kWidth);
  } else {
    swap_middle_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(x, y, count, b, c, d);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_LAYOUT(T)                                                                                  \
  template void add_broadcast_forward<T>(const T*, const float*, T*, int64_t, int64_t, cudaStream_t); \
  template void swap_middle<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_LAYOUT)
#undef SB_LAYOUT

}  // namespace sb::cuda

// The layout family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_layout_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"add_broadcast", SB_TYPED(cuda::add_broadcast_forward(e.at<T>(n.inputs[0]), e.at<float>(n.inputs[1]),
                                                             e.at<T>(n.outputs[0]), size_attr(n, "repeats"),
                                                             size_attr(n, "block"), e.stream()))},
      {"swap_middle", SB_TYPED(cuda::swap_middle(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "a"),
                                                 size_attr(n, "b"), size_attr(n, "c"), size_attr(n, "d"),
                                                 e.stream()))},
  });
}

}  // namespace sb::cuda_binding
