// CUDA detection losses (src/cuda/detection_losses.h). The forward pass runs over the targets (one thread per
// selected element), the backward pass over x (one thread per element of x, writing 0 off the selected column),
// so neither needs a memset or atomics.
#include <cuda_runtime.h>

#include <algorithm>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/detection_losses.h"
#include "src/cuda/stream_scratch.h"
#include "src/core/ops/detection_losses.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;  // the partial sums' count depends on the size only: the same order every run

enum class Loss { kBce, kSmoothL1 };

struct Selection {
  int64_t groups, rows, classes, inner;
};

__device__ inline int64_t input_index(int64_t e, const int32_t* columns, const Selection& s) {
  const int64_t per_group = s.rows * s.inner;
  const int64_t g = e / per_group, rest = e - g * per_group;
  const int64_t row = rest / s.inner, i = rest - row * s.inner;
  const int64_t column = columns != nullptr ? columns[g] : 0;
  return ((g * s.rows + row) * s.classes + column) * s.inner + i;
}

template <Loss kind>
__device__ inline float value(float x, float t, float beta) {
  if (kind == Loss::kBce) return fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x)));
  const float a = fabsf(x - t);
  return a < beta ? 0.5f * a * a / beta : a - 0.5f * beta;
}

template <Loss kind>
__device__ inline float slope(float x, float t, float beta) {
  if (kind == Loss::kBce) return 1.0f / (1.0f + expf(-x)) - t;
  const float d = x - t;
  return fabsf(d) < beta ? d / beta : (d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f));
}

template <Loss kind, typename T>
__global__ void partial_sums_kernel(const T* __restrict__ x, const float* __restrict__ targets,
                                    const float* __restrict__ weights, const int32_t* __restrict__ columns,
                                    Selection s, float beta, int64_t n, double* __restrict__ partials) {
  __shared__ double block[kThreads];
  double sum = 0;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const float w = weights[e];
    if (w != 0.0f) sum += double(w) * value<kind>(to_float(x[input_index(e, columns, s)]), targets[e], beta);
  }
  block[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) block[threadIdx.x] += block[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block[0];
}

__global__ void final_sum_kernel(const double* __restrict__ partials, int count, float* __restrict__ loss) {
  double sum = 0;
  for (int b = 0; b < count; ++b) sum += partials[b];
  *loss = static_cast<float>(sum);
}

template <Loss kind, typename T>
__global__ void backward_kernel(const T* __restrict__ x, const float* __restrict__ targets,
                                const float* __restrict__ weights, const int32_t* __restrict__ columns,
                                T* __restrict__ dx, Selection s, float beta, float seed,
                                const float* __restrict__ loss_scale, int64_t n) {
  const float factor = seed * (loss_scale != nullptr ? *loss_scale : 1.0f);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    // x index i = ((g · rows + row) · classes + column) · inner + k.
    const int64_t k = i % s.inner, rest = i / s.inner;
    const int64_t column = rest % s.classes, group_row = rest / s.classes;
    const int64_t g = group_row / s.rows, row = group_row - g * s.rows;
    const int64_t selected = columns != nullptr ? columns[g] : 0;
    float d = 0.0f;
    if (column == selected) {
      const int64_t e = (g * s.rows + row) * s.inner + k;
      d = factor * weights[e] * slope<kind>(to_float(x[i]), targets[e], beta);
    }
    dx[i] = from_float<T>(d);
  }
}

Selection selection(const cpu::ClassSelection& s) { return Selection{s.groups, s.rows, s.classes, s.inner}; }

int blocks_for(int64_t n) { return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks))); }

template <Loss kind, typename T>
void forward(const T* x, const float* targets, const float* weights, const int32_t* columns, float* loss,
             const cpu::ClassSelection& s, float beta, cudaStream_t stream) {
  const int64_t n = s.elements();
  const int blocks = blocks_for(n);
  ScratchLease scratch(stream, sizeof(double) * blocks);
  auto* partials = static_cast<double*>(scratch.data());
  partial_sums_kernel<kind, T><<<blocks, kThreads, 0, stream>>>(x, targets, weights, columns, selection(s), beta, n,
                                                                partials);
  SB_CUDA_CHECK(cudaGetLastError());
  final_sum_kernel<<<1, 1, 0, stream>>>(partials, blocks, loss);
  SB_CUDA_CHECK(cudaGetLastError());
}

template <Loss kind, typename T>
void backward(const T* x, const float* targets, const float* weights, const int32_t* columns, T* dx,
              const cpu::ClassSelection& s, float beta, float seed, cudaStream_t stream, const float* loss_scale) {
  const int64_t n = s.input_elements();
  if (n == 0) return;
  backward_kernel<kind, T><<<blocks_for(n), kThreads, 0, stream>>>(x, targets, weights, columns, dx, selection(s),
                                                                   beta, seed, loss_scale, n);
  SB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

size_t detection_loss_scratch_bytes(int64_t elements) { return sizeof(double) * blocks_for(elements); }

template <typename T>
void bce_with_logits_forward(const T* x, const float* targets, const float* weights, const int32_t* columns,
                             float* loss, const cpu::ClassSelection& s, cudaStream_t stream) {
  forward<Loss::kBce>(x, targets, weights, columns, loss, s, 0.0f, stream);
}
template <typename T>
void smooth_l1_forward(const T* x, const float* targets, const float* weights, const int32_t* columns, float* loss,
                       const cpu::ClassSelection& s, float beta, cudaStream_t stream) {
  forward<Loss::kSmoothL1>(x, targets, weights, columns, loss, s, beta, stream);
}
template <typename T>
void bce_with_logits_backward(const T* x, const float* targets, const float* weights, const int32_t* columns, T* dx,
                              const cpu::ClassSelection& s, float seed, cudaStream_t stream, const float* loss_scale) {
  backward<Loss::kBce>(x, targets, weights, columns, dx, s, 0.0f, seed, stream, loss_scale);
}
template <typename T>
void smooth_l1_backward(const T* x, const float* targets, const float* weights, const int32_t* columns, T* dx,
                        const cpu::ClassSelection& s, float beta, float seed, cudaStream_t stream,
                        const float* loss_scale) {
  backward<Loss::kSmoothL1>(x, targets, weights, columns, dx, s, beta, seed, stream, loss_scale);
}

#define SB_DETECTION_LOSSES(T)                                                                                    \
  template void bce_with_logits_forward<T>(const T*, const float*, const float*, const int32_t*, float*,          \
                                           const cpu::ClassSelection&, cudaStream_t);                             \
  template void smooth_l1_forward<T>(const T*, const float*, const float*, const int32_t*, float*,                \
                                     const cpu::ClassSelection&, float, cudaStream_t);                            \
  template void bce_with_logits_backward<T>(const T*, const float*, const float*, const int32_t*, T*,             \
                                            const cpu::ClassSelection&, float, cudaStream_t, const float*);       \
  template void smooth_l1_backward<T>(const T*, const float*, const float*, const int32_t*, T*,                   \
                                      const cpu::ClassSelection&, float, float, cudaStream_t, const float*);
SB_INSTANTIATE_FOR_ELEMENTS(SB_DETECTION_LOSSES)
#undef SB_DETECTION_LOSSES

}  // namespace sb::cuda

// The detection_losses family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
namespace {

// The detection losses: x in the compute dtype (dispatch on it), optional int32 class columns as the 4th input.
#define DETECTION_LOSS(body)                                                                     \
  [](CudaExecutor& e, const Node& n) {                                                           \
    with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {                          \
      using T = decltype(element);                                                               \
      const T* x = e.at<T>(n.inputs[0]);                                                         \
      const int32_t* columns = n.inputs.size() > 3 ? e.at<int32_t>(n.inputs[3]) : nullptr;      \
      body;                                                                                      \
    });                                                                                          \
  }

// The scratch of the forward losses' class selection (src/cuda/detection_losses.h).
uint64_t detection_loss_scratch(const Node& n) {
  return cuda::detection_loss_scratch_bytes(detail::class_selection(n.attributes).elements());
}

}  // namespace

void bind_detection_losses_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"bce_with_logits_loss", DETECTION_LOSS(cuda::bce_with_logits_forward(
                                   x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                   e.at<float>(n.outputs[0]), detail::class_selection(n.attributes), e.stream())),
       detection_loss_scratch},
      {"smooth_l1_loss", DETECTION_LOSS(cuda::smooth_l1_forward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]),
                                                                columns, e.at<float>(n.outputs[0]),
                                                                detail::class_selection(n.attributes),
                                                                float_attr(n, "beta"), e.stream())),
       detection_loss_scratch},
      {"bce_with_logits_loss_backward",
       DETECTION_LOSS(cuda::bce_with_logits_backward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                                     e.at<T>(n.outputs[0]), detail::class_selection(n.attributes),
                                                     gradient_weight(n), e.stream(), e.loss_gradient_scale()))},
      {"smooth_l1_loss_backward",
       DETECTION_LOSS(cuda::smooth_l1_backward(x, e.at<float>(n.inputs[1]), e.at<float>(n.inputs[2]), columns,
                                               e.at<T>(n.outputs[0]), detail::class_selection(n.attributes),
                                               float_attr(n, "beta"), gradient_weight(n), e.stream(),
                                               e.loss_gradient_scale()))},
  });
}

}  // namespace sb::cuda_binding

#undef DETECTION_LOSS
