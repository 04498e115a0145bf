// CUDA mean squared and mean absolute losses (src/cuda/pixel_losses.h).
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/grid.h"
#include "src/cuda/pixel_losses.h"
#include "src/core/ops/pixel_losses.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kFinishThreads = 1024;  // = kPixelLossBlocks: one partial per thread
static_assert(kFinishThreads == kPixelLossBlocks, "the finishing block adds one partial per thread");

// Sum of `Term` over the elements, one double per block in partials[blockIdx.x] (tree order inside the block).
template <typename T, typename Term>
__global__ void partial_sum_kernel(const T* __restrict__ a, const T* __restrict__ b, float target, int64_t n,
                                   double* __restrict__ partials) {
  __shared__ double sums[kThreads];
  double sum = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    sum += Term::value(a, b, target, i);
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

__global__ void finish_kernel(const double* __restrict__ partials, int64_t n, float* __restrict__ loss) {
  __shared__ double sums[kFinishThreads];
  sums[threadIdx.x] = partials[threadIdx.x];
  __syncthreads();
  for (int half = kFinishThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = static_cast<float>(sums[0] / double(n));
}

struct SquaredError {
  template <typename T>
  __device__ static double value(const T* x, const T*, float target, int64_t i) {
    const double d = double(to_float(x[i])) - target;
    return d * d;
  }
};
struct AbsoluteError {
  template <typename T>
  __device__ static double value(const T* a, const T* b, float, int64_t i) {
    return fabs(double(to_float(a[i])) - double(to_float(b[i])));
  }
};

template <typename T, typename Term>
void mean_loss(const T* a, const T* b, float target, float* loss, int64_t n, void* workspace, cudaStream_t stream) {
  if (n < 1) throw UsageError("cuda mean loss: needs at least one element, got " + std::to_string(n));
  double* partials = static_cast<double*>(workspace);
  partial_sum_kernel<T, Term><<<kPixelLossBlocks, kThreads, 0, stream>>>(a, b, target, n, partials);
  SB_CUDA_CHECK_LAUNCH();
  finish_kernel<<<1, kFinishThreads, 0, stream>>>(partials, n, loss);
  SB_CUDA_CHECK_LAUNCH();
}

__device__ inline float seed_times_scale(float seed, const float* gradient_scale) {
  return gradient_scale == nullptr ? seed : seed * *gradient_scale;
}

template <typename T>
__global__ void mse_backward_kernel(const T* __restrict__ x, T* __restrict__ dx, int64_t n, float target, float seed,
                                    const float* __restrict__ gradient_scale) {
  const float factor = 2.0f * seed_times_scale(seed, gradient_scale) / static_cast<float>(n);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dx[i] = from_float<T>(factor * (to_float(x[i]) - target));
  }
}

template <typename T>
__global__ void l1_backward_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ da,
                                   T* __restrict__ db, int64_t n, float seed, const float* __restrict__ gradient_scale) {
  const float step = seed_times_scale(seed, gradient_scale) / static_cast<float>(n);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = to_float(a[i]), v = to_float(b[i]);
    const float g = u > v ? step : u < v ? -step : 0.0f;
    da[i] = from_float<T>(g);
    if (db != nullptr) db[i] = from_float<T>(-g);
  }
}

}  // namespace

template <typename T>
void mse_loss_forward(const T* x, float* loss, int64_t n, float target, void* workspace, cudaStream_t stream) {
  mean_loss<T, SquaredError>(x, nullptr, target, loss, n, workspace, stream);
}

template <typename T>
void mse_loss_backward(const T* x, T* dx, int64_t n, float target, float seed, cudaStream_t stream,
                       const float* gradient_scale) {
  if (n < 1) throw UsageError("cuda::mse_loss_backward: needs at least one element");
  mse_backward_kernel<T><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, dx, n, target, seed,
                                                                                          gradient_scale);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void l1_loss_forward(const T* a, const T* b, float* loss, int64_t n, void* workspace, cudaStream_t stream) {
  mean_loss<T, AbsoluteError>(a, b, 0.0f, loss, n, workspace, stream);
}

template <typename T>
void l1_loss_backward(const T* a, const T* b, T* da, T* db, int64_t n, float seed, cudaStream_t stream,
                      const float* gradient_scale) {
  if (n < 1) throw UsageError("cuda::l1_loss_backward: needs at least one element");
  l1_backward_kernel<T><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(a, b, da, db, n, seed,
                                                                                         gradient_scale);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_PIXEL_LOSSES(T)                                                                                \
  template void mse_loss_forward<T>(const T*, float*, int64_t, float, void*, cudaStream_t);               \
  template void mse_loss_backward<T>(const T*, T*, int64_t, float, float, cudaStream_t, const float*);    \
  template void l1_loss_forward<T>(const T*, const T*, float*, int64_t, void*, cudaStream_t);             \
  template void l1_loss_backward<T>(const T*, const T*, T*, T*, int64_t, float, cudaStream_t, const float*);
SB_INSTANTIATE_FOR_ELEMENTS(SB_PIXEL_LOSSES)

}  // namespace sb::cuda

// The pixel_losses family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_pixel_losses_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // The mean losses: inputs in the compute dtype, the loss fp32 (dispatch on the input); the backward pass
      // starts here (its seed times the loss scale, if any).
      {"mse_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::mse_loss_forward(e.at<T>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                  float_attr(n, "target"), e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"mse_loss_backward", SB_TYPED(cuda::mse_loss_backward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                             size_attr(n, "n"), float_attr(n, "target"),
                                                             gradient_weight(n), e.stream(),
                                                             e.loss_gradient_scale()))},
      {"l1_loss",
       [](CudaExecutor& e, const Node& n) {
         with_element_type(dtype_of(e, n.inputs[0]), n, [&](auto element) {
           using T = decltype(element);
           cuda::l1_loss_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<float>(n.outputs[0]),
                                 size_attr(n, "n"), e.u8(n.outputs[1]), e.stream());
         });
       }},
      {"l1_loss_backward", SB_TYPED(cuda::l1_loss_backward(
                               e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                               n.outputs.size() > 1 ? e.at<T>(n.outputs[1]) : nullptr, size_attr(n, "n"),
                               gradient_weight(n), e.stream(), e.loss_gradient_scale()))},
  });
}

}  // namespace sb::cuda_binding
