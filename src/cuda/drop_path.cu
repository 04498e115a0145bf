// Drop-path kernel (drop_path.h): one thread per element, the keep decision recomputed from the sample index.
#include "scalebench/error.h"
#include "scalebench/philox.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/drop_path.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void drop_path_kernel(const T* x, T* y, int64_t total, int64_t per_sample, float p, float scale,
                                 PhiloxKey key, StepValue step_offset) {
  const auto offset = static_cast<uint64_t>(step_offset.resolve());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / per_sample;
    const PhiloxCounter bits = philox4x32(philox_counter(offset + uint64_t(n / 4)), key);
    const bool keep = uniform_from_bits(bits.word[n % 4]) >= p;
    y[i] = from_float<T>(keep ? to_float(x[i]) * scale : 0.0f);
  }
}

}  // namespace

template <typename T>
void drop_path_forward(const T* x, T* y, int64_t batch, int64_t per_sample, float p, uint64_t seed, StepValue offset,
                       cudaStream_t stream) {
  if (!(p >= 0.0f && p < 1.0f) || batch < 0 || per_sample < 0) {
    throw UsageError("drop_path: needs 0 <= p < 1 and non-negative sizes");
  }
  const int64_t total = batch * per_sample;
  if (total == 0) return;
  drop_path_kernel<<<detail::grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(
      x, y, total, per_sample, p, 1.0f / (1.0f - p), philox_key(seed), offset);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_DROP_PATH(T) \
  template void drop_path_forward<T>(const T*, T*, int64_t, int64_t, float, uint64_t, StepValue, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_DROP_PATH)

}  // namespace sb::cuda

// The drop_path family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_drop_path_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"drop_path", SB_TYPED(cuda::drop_path_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                     size_attr(n, "per_sample"), float_attr(n, "p"), e.seed(),
                                                     dropout_offset_value(e, n), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
