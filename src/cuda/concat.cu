// Concatenation kernels (concat.h): the part pointers and column offsets travel by value in the kernel's
// arguments; each thread finds its part by a short scan of the offsets (<= 16).
#include "scalebench/error.h"
#include "src/cuda/concat.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
struct Parts {
  T* pointer[kMaxConcatParts];
  int64_t begin[kMaxConcatParts + 1];  // column offsets in the concatenated row; begin[count] = total width
  int count;
};

template <typename T>
Parts<T> describe(const std::vector<T*>& parts, const std::vector<int64_t>& widths) {
  if (parts.empty() || parts.size() != widths.size() || parts.size() > size_t(kMaxConcatParts)) {
    throw UsageError("concat: 1 to " + std::to_string(kMaxConcatParts) + " parts, one width each");
  }
  Parts<T> d{};
  d.count = static_cast<int>(parts.size());
  for (int k = 0; k < d.count; ++k) {
    d.pointer[k] = parts[size_t(k)];
    d.begin[k + 1] = d.begin[k] + widths[size_t(k)];
  }
  return d;
}

// to_parts: y -> parts (split); otherwise parts -> y (concat).
template <typename T, bool kToParts>
__global__ void copy_kernel(Parts<T> parts, T* y, int64_t rows) {
  const int64_t total_width = parts.begin[parts.count];
  const int64_t total = rows * total_width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / total_width, column = i % total_width;
    int k = 0;
    while (column >= parts.begin[k + 1]) ++k;
    const int64_t width = parts.begin[k + 1] - parts.begin[k];
    T* element = parts.pointer[k] + row * width + (column - parts.begin[k]);
    if constexpr (kToParts) {
      *element = y[i];
    } else {
      y[i] = *element;
    }
  }
}

}  // namespace

template <typename T>
void concat_last(const std::vector<const T*>& parts, const std::vector<int64_t>& widths, T* y, int64_t rows,
                 cudaStream_t stream) {
  std::vector<T*> mutable_parts;
  for (const T* p : parts) mutable_parts.push_back(const_cast<T*>(p));  // read only by this kernel
  const Parts<T> d = describe(mutable_parts, widths);
  const int64_t total = rows * d.begin[d.count];
  if (total == 0) return;
  copy_kernel<T, false><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(d, y, rows);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void split_last(const T* x, const std::vector<T*>& parts, const std::vector<int64_t>& widths, int64_t rows,
                cudaStream_t stream) {
  const Parts<T> d = describe(parts, widths);
  const int64_t total = rows * d.begin[d.count];
  if (total == 0) return;
  copy_kernel<T, true><<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(d, const_cast<T*>(x),
                                                                                            rows);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_CONCAT(T)                                                                                                \
  template void concat_last<T>(const std::vector<const T*>&, const std::vector<int64_t>&, T*, int64_t,             \
                               cudaStream_t);                                                                       \
  template void split_last<T>(const T*, const std::vector<T*>&, const std::vector<int64_t>&, int64_t, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_CONCAT)

}  // namespace sb::cuda

// The concat family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
namespace {

std::vector<int64_t> concat_widths(const Node& n) {
  std::vector<int64_t> widths;
  for (int64_t k = 0; k < size_attr(n, "parts"); ++k) {
    widths.push_back(size_attr(n, ("w" + std::to_string(k)).c_str()));
  }
  return widths;
}

}  // namespace

void bind_concat_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"concat", SB_TYPED({
         std::vector<const T*> parts;
         for (TensorId id : n.inputs) parts.push_back(e.at<T>(id));
         cuda::concat_last(parts, concat_widths(n), e.at<T>(n.outputs[0]), size_attr(n, "rows"), e.stream());
       })},
      {"split", SB_TYPED({
         std::vector<T*> parts;
         for (TensorId id : n.outputs) parts.push_back(e.at<T>(id));
         cuda::split_last(e.at<T>(n.inputs[0]), parts, concat_widths(n), size_attr(n, "rows"), e.stream());
       })},
  });
}

}  // namespace sb::cuda_binding
