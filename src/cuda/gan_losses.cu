// CUDA GAN losses (src/cuda/gan_losses.h).
#include <cuda_runtime.h>

#include "scalebench/error.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/gan_losses.h"
#include "src/cuda/grid.h"
#include "src/cuda/optimizer.h"
#include "src/cuda/stylegan_kernels_common.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void softplus_forward_kernel(const float* scores, float* loss, int64_t n, float sign) {
  __shared__ double shared[kThreads];
  double partial = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const double z = double(sign) * scores[i];
    partial += fmax(z, 0.0) + log1p(exp(-fabs(z)));
  }
  const double total = detail::block_sum<kThreads>(partial, shared);
  if (threadIdx.x == 0) *loss = static_cast<float>(total / double(n));
}

__global__ void softplus_backward_kernel(const float* scores, float* dscores, int64_t n, float sign, float weight,
                                         const float* loss_scale) {
  const double seed = double(weight) * (loss_scale != nullptr ? *loss_scale : 1.0f);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double z = double(sign) * scores[i];
    dscores[i] = static_cast<float>(seed * sign / (1.0 + exp(-z)) / double(n));
  }
}

__global__ void squared_norm_finish_kernel(const double* scratch, float* loss, int64_t batch, float scale) {
  *loss = static_cast<float>(double(scale) * scratch[0] / double(batch));
}

__global__ void squared_norm_backward_kernel(const float* x, float* dx, int64_t elements, float factor,
                                             const float* loss_scale) {
  const float f = factor * (loss_scale != nullptr ? *loss_scale : 1.0f);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elements;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = f * x[i];
  }
}

}  // namespace

void softplus_loss_forward(const float* scores, float* loss, int64_t n, float sign, cudaStream_t stream) {
  if (n < 1) throw UsageError("cuda::softplus_loss_forward: no scores");
  softplus_forward_kernel<<<1, kThreads, 0, stream>>>(scores, loss, n, sign);
  SB_CUDA_CHECK_LAUNCH();
}

void softplus_loss_backward(const float* scores, float* dscores, int64_t n, float sign, float weight,
                            cudaStream_t stream, const float* loss_scale) {
  if (n < 1) throw UsageError("cuda::softplus_loss_backward: no scores");
  softplus_backward_kernel<<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(scores, dscores, n, sign,
                                                                                             weight, loss_scale);
  SB_CUDA_CHECK_LAUNCH();
}

void squared_norm_loss_forward(const float* x, float* loss, int64_t elements, int64_t batch, float scale,
                               double* scratch, cudaStream_t stream) {
  if (elements < 1 || batch < 1) throw UsageError("cuda::squared_norm_loss_forward: empty input");
  grad_norm_squared(x, elements, scratch, stream);
  squared_norm_finish_kernel<<<1, 1, 0, stream>>>(scratch, loss, batch, scale);
  SB_CUDA_CHECK_LAUNCH();
}

void squared_norm_loss_backward(const float* x, float* dx, int64_t elements, int64_t batch, float scale,
                                float weight, cudaStream_t stream, const float* loss_scale) {
  if (elements < 1 || batch < 1) throw UsageError("cuda::squared_norm_loss_backward: empty input");
  const float factor = static_cast<float>(2.0 * double(weight) * scale / double(batch));
  squared_norm_backward_kernel<<<detail::grid_stride_blocks(elements, kThreads), kThreads, 0, stream>>>(
      x, dx, elements, factor, loss_scale);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda

// The gan_losses family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_gan_losses_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"softplus_loss",
       [](CudaExecutor& e, const Node& n) {
         cuda::softplus_loss_forward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                     float_attr(n, "sign"), e.stream());
       }},
      {"softplus_loss_backward",  // starts the backward pass: dloss = 1 (times its weight and the loss scale)
       [](CudaExecutor& e, const Node& n) {
         cuda::softplus_loss_backward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                      float_attr(n, "sign"), gradient_weight(n), e.stream(), e.loss_gradient_scale());
       }},
      {"squared_norm_loss",
       [](CudaExecutor& e, const Node& n) {
         cuda::squared_norm_loss_forward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                         size_attr(n, "batch"), float_attr(n, "scale"),
                                         reinterpret_cast<double*>(e.u8(n.outputs[1])), e.stream());
       }},
      {"squared_norm_loss_backward",
       [](CudaExecutor& e, const Node& n) {
         cuda::squared_norm_loss_backward(e.at<float>(n.inputs[0]), e.at<float>(n.outputs[0]), size_attr(n, "n"),
                                          size_attr(n, "batch"), float_attr(n, "scale"), gradient_weight(n), e.stream(),
                                          e.loss_gradient_scale());
       }},
  });
}

}  // namespace sb::cuda_binding
