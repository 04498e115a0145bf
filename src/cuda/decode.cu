// CUDA greedy-decoding ops (src/cuda/decode.h). argmax: one block of 512 threads per row, each thread keeps the
// first maximum of its strided columns, then a shuffle and a shared-memory reduction that prefers the larger
// value and, between equal ones, the smaller index (the CPU's first maximum). The others are grid-stride
// copies and fills that read the step counter on the device.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/decode.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kArgmaxThreads = 512;
constexpr int kThreads = 256;

// (value a, index ia) comes before (b, ib): larger, NaN largest, the smaller index between equals.
__device__ inline bool before(float a, int64_t ia, float b, int64_t ib) {
  const bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na && (!nb || ia < ib);
  return a > b || (a == b && ia < ib);
}

template <typename T>
__global__ void argmax_rows_kernel(const T* x, int32_t* out, int64_t cols) {
  __shared__ float best_value[kArgmaxThreads / 32];
  __shared__ int64_t best_index[kArgmaxThreads / 32];
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float value = -INFINITY;
  int64_t index = cols;  // past every column: loses to any real one
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = to_float(row[c]);
    if (index == cols || before(v, c, value, index)) value = v, index = c;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_down_sync(0xffffffffu, value, offset);
    const int64_t i = __shfl_down_sync(0xffffffffu, index, offset);
    if (i < cols && (index == cols || before(v, i, value, index))) value = v, index = i;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) best_value[warp] = value, best_index[warp] = index;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (best_index[w] < cols && (index == cols || before(best_value[w], best_index[w], value, index))) {
        value = best_value[w], index = best_index[w];
      }
    }
    out[blockIdx.x] = static_cast<int32_t>(index);
  }
}

template <typename E>
__global__ void write_at_counter_kernel(const E* src, E* dst, const int32_t* counter, int64_t outer, int64_t time,
                                        int64_t inner, int64_t offset) {
  const int64_t t = static_cast<int64_t>(counter[0]) + offset;
  if (t < 0 || t >= time) return;
  const int64_t n = outer * inner, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t o = i / inner, c = i % inner;
    dst[(o * time + t) * inner + c] = src[i];
  }
}

__global__ void fill_from_counter_kernel(const int32_t* counter, int32_t* out, int64_t n, int64_t offset) {
  const int32_t value = static_cast<int32_t>(counter[0] + offset);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = value;
}

__global__ void update_counter_kernel(int32_t* counter, int64_t keep, int64_t add) {
  counter[0] = static_cast<int32_t>(keep * counter[0] + add);
}

__global__ void end_sentences_kernel(int32_t* ids, const int32_t* lengths, int64_t rows, int64_t time, int32_t eos,
                                     int32_t pad) {
  const int64_t n = rows * time, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t r = i / time, t = i % time;
    const int64_t given = lengths[r];
    const int64_t length = given < 1 ? 1 : (given > time ? time : given);
    if (t == length - 1) ids[i] = eos;
    if (t >= length) ids[i] = pad;
  }
}

void check_sizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s < 0) throw UsageError(std::string("cuda::") + op + ": negative size " + std::to_string(s));
  }
}

}  // namespace

template <typename T>
void argmax_rows(const T* x, int32_t* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_sizes("argmax_rows", {rows, cols});
  if (rows == 0) return;
  if (cols < 1) throw UsageError("cuda::argmax_rows: a row needs at least one column");
  if (rows > 0x7fffffff) throw UsageError("cuda::argmax_rows: more rows than a grid holds");
  argmax_rows_kernel<T><<<static_cast<unsigned>(rows), kArgmaxThreads, 0, stream>>>(x, out, cols);
  SB_CUDA_CHECK_LAUNCH();
}

void write_at_counter(const void* src, void* dst, const int32_t* counter, int64_t outer, int64_t time,
                      int64_t inner, int64_t element_bytes, int64_t offset, cudaStream_t stream) {
  check_sizes("write_at_counter", {outer, time, inner});
  if (outer * inner == 0 || time == 0) return;
  const int blocks = detail::grid_stride_blocks(outer * inner, kThreads);
  switch (element_bytes) {
    case 1:
      write_at_counter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                                static_cast<uint8_t*>(dst), counter, outer, time,
                                                                inner, offset);
      break;
    case 2:
      write_at_counter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(src),
                                                                static_cast<uint16_t*>(dst), counter, outer, time,
                                                                inner, offset);
      break;
    case 4:
      write_at_counter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t*>(src),
                                                                static_cast<uint32_t*>(dst), counter, outer, time,
                                                                inner, offset);
      break;
    case 8:
      write_at_counter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint64_t*>(src),
                                                                static_cast<uint64_t*>(dst), counter, outer, time,
                                                                inner, offset);
      break;
    default:
      throw UsageError("cuda::write_at_counter: elements of " + std::to_string(element_bytes) + " bytes");
  }
  SB_CUDA_CHECK_LAUNCH();
}

void fill_from_counter(const int32_t* counter, int32_t* out, int64_t n, int64_t offset, cudaStream_t stream) {
  check_sizes("fill_from_counter", {n});
  if (n == 0) return;
  fill_from_counter_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(counter, out, n, offset);
  SB_CUDA_CHECK_LAUNCH();
}

void update_counter(int32_t* counter, int64_t keep, int64_t add, cudaStream_t stream) {
  update_counter_kernel<<<1, 1, 0, stream>>>(counter, keep, add);
  SB_CUDA_CHECK_LAUNCH();
}

void end_sentences(int32_t* ids, const int32_t* lengths, int64_t rows, int64_t time, int32_t eos, int32_t pad,
                   cudaStream_t stream) {
  check_sizes("end_sentences", {rows, time});
  if (rows * time == 0) return;
  end_sentences_kernel<<<detail::grid_stride_blocks(rows * time, kThreads), kThreads, 0, stream>>>(
      ids, lengths, rows, time, eos, pad);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_ARGMAX(T) template void argmax_rows<T>(const T*, int32_t*, int64_t, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_ARGMAX)
#undef SB_ARGMAX

}  // namespace sb::cuda

// The decode family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_decode_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // Greedy decoding (src/cuda/decode.h): the step counter stays on the device; copies switch inputs.
      {"argmax",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::argmax_rows(e.at<T>(n.inputs[0]), e.at<int32_t>(n.outputs[0]), size_attr(n, "rows"),
                             size_attr(n, "cols"), e.stream());
         });
       }},
      {"write_at_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::write_at_counter(e.u8(n.inputs[0]), e.u8(n.outputs[0]), e.at<int32_t>(n.inputs[1]),
                                size_attr(n, "outer"), size_attr(n, "time"), size_attr(n, "inner"),
                                size_attr(n, "element_bytes"), size_attr(n, "offset"), e.stream());
       }},
      {"fill_from_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::fill_from_counter(e.at<int32_t>(n.inputs[0]), e.at<int32_t>(n.outputs[0]), size_attr(n, "n"),
                                 size_attr(n, "offset"), e.stream());
       }},
      {"update_counter",
       [](CudaExecutor& e, const Node& n) {
         cuda::update_counter(e.at<int32_t>(n.outputs[0]), size_attr(n, "keep"), size_attr(n, "add"), e.stream());
       }},
      {"end_sentences",
       [](CudaExecutor& e, const Node& n) {
         cuda::end_sentences(e.at<int32_t>(n.outputs[0]), e.at<int32_t>(n.inputs[0]), size_attr(n, "rows"),
                             size_attr(n, "time"), static_cast<int32_t>(size_attr(n, "eos")),
                             static_cast<int32_t>(size_attr(n, "pad")), e.stream());
       }},
  });
}

}  // namespace sb::cuda_binding
