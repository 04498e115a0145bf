// CUDA minibatch standard deviation (src/cuda/minibatch_stddev.h): block b handles group b (part b / M, group
// b % M); its threads stride over the H·W·C positions, recomputing each position's mean and sigma over the
// group's members where a pass needs them (G = 4 reads) instead of keeping a buffer.
#include <cuda_runtime.h>

#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
#include "src/cuda/minibatch_stddev.h"
#include "src/cuda/stylegan_kernels_common.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

struct Group {
  int64_t first, step;  // member g is sample first + g * step
  int64_t members;
};

__device__ Group group_of_block(const cpu::MinibatchStddevGeometry g) {
  const int64_t per_part = g.batch / g.splits / g.group;
  const int64_t s = blockIdx.x / per_part, m = blockIdx.x % per_part;
  return Group{s * (g.batch / g.splits) + m, per_part, g.group};
}

// Mean and sigma over the members at position k.
template <typename T>
__device__ void statistics(const T* x, const Group group, int64_t K, int64_t k, double& mean, double& sigma) {
  mean = 0;
  for (int64_t member = 0; member < group.members; ++member) mean += to_float(x[(group.first + member * group.step) * K + k]);
  mean /= double(group.members);
  double variance = 0;
  for (int64_t member = 0; member < group.members; ++member) {
    const double d = to_float(x[(group.first + member * group.step) * K + k]) - mean;
    variance += d * d;
  }
  sigma = sqrt(variance / double(group.members) + cpu::kMinibatchStddevEpsilon);
}

// T: dy's statistic channel summed over the group's members and pixels.
template <typename T>
__device__ double statistic_upstream(const T* dy, const Group group, int64_t pixels, int64_t C, double* shared) {
  double partial = 0;
  for (int64_t i = threadIdx.x; i < group.members * pixels; i += kThreads) {
    const int64_t n = group.first + (i / pixels) * group.step, p = i % pixels;
    partial += to_float(dy[(n * pixels + p) * (C + 1) + C]);
  }
  return detail::block_sum<kThreads>(partial, shared);
}

template <typename T>
__global__ void forward_kernel(const T* x, T* y, const cpu::MinibatchStddevGeometry g) {
  __shared__ double shared[kThreads];
  const Group group = group_of_block(g);
  const int64_t K = g.height * g.width * g.channels, C = g.channels, pixels = g.height * g.width;
  double partial = 0;
  for (int64_t k = threadIdx.x; k < K; k += kThreads) {
    double mean, sigma;
    statistics(x, group, K, k, mean, sigma);
    partial += sigma;
  }
  const float statistic = static_cast<float>(detail::block_sum<kThreads>(partial, shared) / double(K));
  for (int64_t i = threadIdx.x; i < group.members * pixels * (C + 1); i += kThreads) {
    const int64_t member = i / (pixels * (C + 1)), rest = i % (pixels * (C + 1));
    const int64_t p = rest / (C + 1), c = rest % (C + 1);
    const int64_t n = group.first + member * group.step;
    y[(n * pixels + p) * (C + 1) + c] = c < C ? x[n * K + p * C + c] : from_float<T>(statistic);
  }
}

template <typename T>
__global__ void backward_kernel(const T* x, const T* dy, T* dx, const cpu::MinibatchStddevGeometry g) {
  __shared__ double shared[kThreads];
  const Group group = group_of_block(g);
  const int64_t K = g.height * g.width * g.channels, C = g.channels, pixels = g.height * g.width;
  const double factor = statistic_upstream(dy, group, pixels, C, shared) / double(K * group.members);
  for (int64_t k = threadIdx.x; k < K; k += kThreads) {
    double mean, sigma;
    statistics(x, group, K, k, mean, sigma);
    const int64_t p = k / C, c = k % C;
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      dx[n * K + k] = from_float<T>(static_cast<float>(to_float(dy[(n * pixels + p) * (C + 1) + c]) +
                                                        factor * (to_float(x[n * K + k]) - mean) / sigma));
    }
  }
}

template <typename T>
__global__ void backward_backward_kernel(const T* x, const T* dy, const T* u, T* dx2, T* ddy,
                                         const cpu::MinibatchStddevGeometry g) {
  __shared__ double shared[kThreads];
  const Group group = group_of_block(g);
  const int64_t K = g.height * g.width * g.channels, C = g.channels, pixels = g.height * g.width;
  const double G = double(group.members);
  const double factor = statistic_upstream(dy, group, pixels, C, shared) / (double(K) * G);
  double partial = 0;  // sum over k of (sum_g u d) / sigma
  for (int64_t k = threadIdx.x; k < K; k += kThreads) {
    double mean, sigma, u_dot_d = 0;
    statistics(x, group, K, k, mean, sigma);
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      u_dot_d += double(to_float(u[n * K + k])) * (to_float(x[n * K + k]) - mean);
    }
    partial += u_dot_d / sigma;
  }
  const float r = static_cast<float>(detail::block_sum<kThreads>(partial, shared) / (double(K) * G));
  for (int64_t k = threadIdx.x; k < K; k += kThreads) {
    double mean, sigma, u_mean = 0, u_dot_d = 0;
    statistics(x, group, K, k, mean, sigma);
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      u_mean += to_float(u[n * K + k]) / G;
      u_dot_d += double(to_float(u[n * K + k])) * (to_float(x[n * K + k]) - mean);
    }
    const int64_t p = k / C, c = k % C;
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      const double d = to_float(x[n * K + k]) - mean;
      dx2[n * K + k] = from_float<T>(static_cast<float>(
          factor * ((to_float(u[n * K + k]) - u_mean) / sigma - d * u_dot_d / (G * sigma * sigma * sigma))));
      ddy[(n * pixels + p) * (C + 1) + c] = u[n * K + k];
      if (c == 0) ddy[(n * pixels + p) * (C + 1) + C] = from_float<T>(r);
    }
  }
}

int groups(const cpu::MinibatchStddevGeometry& g) {
  cpu::check_minibatch_stddev_geometry(g);
  return static_cast<int>(g.splits * g.groups_per_part());
}

}  // namespace

template <typename T>
void minibatch_stddev_forward(const T* x, T* y, const cpu::MinibatchStddevGeometry& g, cudaStream_t stream) {
  forward_kernel<T><<<groups(g), kThreads, 0, stream>>>(x, y, g);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void minibatch_stddev_backward(const T* x, const T* dy, T* dx, const cpu::MinibatchStddevGeometry& g,
                               cudaStream_t stream) {
  backward_kernel<T><<<groups(g), kThreads, 0, stream>>>(x, dy, dx, g);
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T>
void minibatch_stddev_backward_backward(const T* x, const T* dy, const T* u, T* dx2, T* ddy,
                                        const cpu::MinibatchStddevGeometry& g, cudaStream_t stream) {
  backward_backward_kernel<T><<<groups(g), kThreads, 0, stream>>>(x, dy, u, dx2, ddy, g);
  SB_CUDA_CHECK_LAUNCH();
}

#define SB_MINIBATCH_STDDEV(T)                                                                                    \
  template void minibatch_stddev_forward<T>(const T*, T*, const cpu::MinibatchStddevGeometry&, cudaStream_t);       \
  template void minibatch_stddev_backward<T>(const T*, const T*, T*, const cpu::MinibatchStddevGeometry&,          \
                                             cudaStream_t);                                                         \
  template void minibatch_stddev_backward_backward<T>(const T*, const T*, const T*, T*, T*,                        \
                                                      const cpu::MinibatchStddevGeometry&, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_MINIBATCH_STDDEV)

}  // namespace sb::cuda

// The minibatch_stddev family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {
void bind_minibatch_stddev_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"minibatch_stddev", SB_TYPED(cuda::minibatch_stddev_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]),
                                                                   minibatch_stddev_geometry(n), e.stream()))},
      {"minibatch_stddev_backward",
       SB_TYPED(cuda::minibatch_stddev_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]),
                                                minibatch_stddev_geometry(n), e.stream()))},
      {"minibatch_stddev_backward_backward",
       SB_TYPED(cuda::minibatch_stddev_backward_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                         e.at<T>(n.inputs[2]), e.at<T>(n.outputs[0]),
                                                         e.at<T>(n.outputs[1]), minibatch_stddev_geometry(n), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
