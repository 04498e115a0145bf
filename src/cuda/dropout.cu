// CUDA dropout (src/cuda/dropout.h). One thread per Philox block: group g covers elements 4g .. 4g+3 and
// draws philox4x32(counter offset + g, key seed), word j deciding element 4g + j, exactly the CPU mapping.
// When x and y are aligned to a group of T (16 bytes for float, 8 for bf16) and mask 4-byte aligned, a full
// group moves as one vector load/store of 4 T and one uchar4; the last partial group and misaligned pointers
// go element by element (the lane loop is unrolled so the Philox words stay in registers). Grid-stride, 256
// threads per block, at most one full wave. The scale 1.0f / (1.0f - p) is computed on the host with the same
// IEEE division as the CPU and passed in, so y = x * scale is the identical fp32 product, rounded once to T.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/dropout.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kGroup = 4;  // elements per Philox block (one 32-bit word each)

// The 4 elements of one Philox group as one aligned access: float4-sized for float, 8 bytes for bf16.
template <typename T>
using Group = Pack<T, kGroup>;

template <typename T>
bool group_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(Group<T>) == 0;
}

__device__ inline bool keep_element(uint32_t bits, float p) { return uniform_from_bits(bits) >= p; }

// y may be x: every element is read before its own thread writes it.
template <typename T, bool kVector>
__global__ void dropout_forward_kernel(const T* x, T* y, uint8_t* mask, int64_t n, float p, float scale,
                                       PhiloxKey key, StepValue step_offset) {
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  const int64_t groups = (n + kGroup - 1) / kGroup;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const PhiloxCounter bits = philox4x32(philox_counter(offset + static_cast<uint64_t>(g)), key);
    const int64_t first = g * kGroup;
    if (kVector && first + kGroup <= n) {
      const Group<T> in = reinterpret_cast<const Group<T>*>(x)[g];
      Group<T> out;
      uint8_t keep[kGroup];
#pragma unroll
      for (int lane = 0; lane < kGroup; ++lane) {
        keep[lane] = keep_element(bits.word[lane], p) ? 1 : 0;
        out.element[lane] = from_float<T>(keep[lane] ? to_float(in.element[lane]) * scale : 0.0f);
      }
      reinterpret_cast<Group<T>*>(y)[g] = out;
      if (mask != nullptr) reinterpret_cast<uchar4*>(mask)[g] = make_uchar4(keep[0], keep[1], keep[2], keep[3]);
    } else {
#pragma unroll
      for (int lane = 0; lane < kGroup; ++lane) {
        const int64_t i = first + lane;
        if (i < n) {
          const bool keep = keep_element(bits.word[lane], p);
          const float value = to_float(x[i]);
          if (mask != nullptr) mask[i] = keep ? 1 : 0;
          y[i] = from_float<T>(keep ? value * scale : 0.0f);
        }
      }
    }
  }
}

// dx may be dy.
template <typename T, bool kVector>
__global__ void dropout_backward_kernel(const T* dy, const uint8_t* mask, T* dx, int64_t n, float scale) {
  const int64_t groups = (n + kGroup - 1) / kGroup;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t first = g * kGroup;
    if (kVector && first + kGroup <= n) {
      const Group<T> in = reinterpret_cast<const Group<T>*>(dy)[g];
      const uchar4 m = reinterpret_cast<const uchar4*>(mask)[g];
      const uint8_t kept[kGroup] = {m.x, m.y, m.z, m.w};
      Group<T> out;
#pragma unroll
      for (int lane = 0; lane < kGroup; ++lane) {
        out.element[lane] = from_float<T>(kept[lane] != 0 ? to_float(in.element[lane]) * scale : 0.0f);
      }
      reinterpret_cast<Group<T>*>(dx)[g] = out;
    } else {
#pragma unroll
      for (int lane = 0; lane < kGroup; ++lane) {
        const int64_t i = first + lane;
        if (i < n) dx[i] = from_float<T>(mask[i] != 0 ? to_float(dy[i]) * scale : 0.0f);
      }
    }
  }
}

void check_arguments(const char* op, int64_t n, float p) {
  if (n < 0) throw UsageError(std::string("cuda::") + op + ": negative element count " + std::to_string(n));
  if (!(p >= 0.0f && p < 1.0f)) {
    throw UsageError(std::string("cuda::") + op + ": dropout probability " + std::to_string(p) +
                     " outside [0, 1)");
  }
}

bool aligned_4(const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; }

}  // namespace

template <typename T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, float p, uint64_t seed, StepValue offset,
                     cudaStream_t stream) {
  check_arguments("dropout_forward", n, p);
  if (n == 0) return;
  const float scale = 1.0f / (1.0f - p);
  const int blocks = detail::grid_stride_blocks((n + kGroup - 1) / kGroup, kThreads);
  if (group_aligned<T>(x) && group_aligned<T>(y) && aligned_4(mask)) {
    dropout_forward_kernel<T, true><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, p, scale, philox_key(seed),
                                                                     offset);
  } else {
    dropout_forward_kernel<T, false><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, p, scale, philox_key(seed),
                                                                      offset);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, float p, cudaStream_t stream) {
  check_arguments("dropout_backward", n, p);
  if (n == 0) return;
  const float scale = 1.0f / (1.0f - p);
  const int blocks = detail::grid_stride_blocks((n + kGroup - 1) / kGroup, kThreads);
  if (group_aligned<T>(dy) && group_aligned<T>(dx) && aligned_4(mask)) {
    dropout_backward_kernel<T, true><<<blocks, kThreads, 0, stream>>>(dy, mask, dx, n, scale);
  } else {
    dropout_backward_kernel<T, false><<<blocks, kThreads, 0, stream>>>(dy, mask, dx, n, scale);
  }
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_DROPOUT(T)                                                                                         \
  template void dropout_forward<T>(const T*, T*, uint8_t*, int64_t, float, uint64_t, StepValue, cudaStream_t); \
  template void dropout_backward<T>(const T*, const uint8_t*, T*, int64_t, float, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_DROPOUT)
#undef SB_DROPOUT

}  // namespace sb::cuda

// The dropout family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_dropout_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"dropout", SB_TYPED(cuda::dropout_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),  // no mask kept
                                                 static_cast<uint8_t*>(nullptr), size_attr(n, "n"),
                                                 float_attr(n, "p"), e.seed(), dropout_offset_value(e, n),
                                                 e.stream()))},
  });
}

}  // namespace sb::cuda_binding
