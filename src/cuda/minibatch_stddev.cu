// CUDA minibatch standard deviation (src/cuda/minibatch_stddev.h): block b handles group b (part b / M, group
// b % M); its threads stride over the H·W·C positions, recomputing each position's mean and sigma over the
// group's members where a pass needs them (G = 4 reads) instead of keeping a buffer.
#include <cuda_runtime.h>

#include "src/cuda/cuda_check.h"
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
__device__ void statistics(const float* x, const Group group, int64_t K, int64_t k, double& mean, double& sigma) {
  mean = 0;
  for (int64_t member = 0; member < group.members; ++member) mean += x[(group.first + member * group.step) * K + k];
  mean /= double(group.members);
  double variance = 0;
  for (int64_t member = 0; member < group.members; ++member) {
    const double d = x[(group.first + member * group.step) * K + k] - mean;
    variance += d * d;
  }
  sigma = sqrt(variance / double(group.members) + cpu::kMinibatchStddevEpsilon);
}

// T: dy's statistic channel summed over the group's members and pixels.
__device__ double statistic_upstream(const float* dy, const Group group, int64_t pixels, int64_t C, double* shared) {
  double partial = 0;
  for (int64_t i = threadIdx.x; i < group.members * pixels; i += kThreads) {
    const int64_t n = group.first + (i / pixels) * group.step, p = i % pixels;
    partial += dy[(n * pixels + p) * (C + 1) + C];
  }
  return detail::block_sum<kThreads>(partial, shared);
}

__global__ void forward_kernel(const float* x, float* y, const cpu::MinibatchStddevGeometry g) {
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
    y[(n * pixels + p) * (C + 1) + c] = c < C ? x[n * K + p * C + c] : statistic;
  }
}

__global__ void backward_kernel(const float* x, const float* dy, float* dx, const cpu::MinibatchStddevGeometry g) {
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
      dx[n * K + k] = static_cast<float>(dy[(n * pixels + p) * (C + 1) + c] + factor * (x[n * K + k] - mean) / sigma);
    }
  }
}

__global__ void backward_backward_kernel(const float* x, const float* dy, const float* u, float* dx2, float* ddy,
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
      u_dot_d += double(u[n * K + k]) * (x[n * K + k] - mean);
    }
    partial += u_dot_d / sigma;
  }
  const float r = static_cast<float>(detail::block_sum<kThreads>(partial, shared) / (double(K) * G));
  for (int64_t k = threadIdx.x; k < K; k += kThreads) {
    double mean, sigma, u_mean = 0, u_dot_d = 0;
    statistics(x, group, K, k, mean, sigma);
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      u_mean += u[n * K + k] / G;
      u_dot_d += double(u[n * K + k]) * (x[n * K + k] - mean);
    }
    const int64_t p = k / C, c = k % C;
    for (int64_t member = 0; member < group.members; ++member) {
      const int64_t n = group.first + member * group.step;
      const double d = x[n * K + k] - mean;
      dx2[n * K + k] =
          static_cast<float>(factor * ((u[n * K + k] - u_mean) / sigma - d * u_dot_d / (G * sigma * sigma * sigma)));
      ddy[(n * pixels + p) * (C + 1) + c] = u[n * K + k];
      if (c == 0) ddy[(n * pixels + p) * (C + 1) + C] = r;
    }
  }
}

int groups(const cpu::MinibatchStddevGeometry& g) {
  cpu::check_minibatch_stddev_geometry(g);
  return static_cast<int>(g.splits * g.groups_per_part());
}

}  // namespace

void minibatch_stddev_forward(const float* x, float* y, const cpu::MinibatchStddevGeometry& g, cudaStream_t stream) {
  forward_kernel<<<groups(g), kThreads, 0, stream>>>(x, y, g);
  SB_CUDA_CHECK_LAUNCH();
}

void minibatch_stddev_backward(const float* x, const float* dy, float* dx, const cpu::MinibatchStddevGeometry& g,
                               cudaStream_t stream) {
  backward_kernel<<<groups(g), kThreads, 0, stream>>>(x, dy, dx, g);
  SB_CUDA_CHECK_LAUNCH();
}

void minibatch_stddev_backward_backward(const float* x, const float* dy, const float* u, float* dx2, float* ddy,
                                        const cpu::MinibatchStddevGeometry& g, cudaStream_t stream) {
  backward_backward_kernel<<<groups(g), kThreads, 0, stream>>>(x, dy, u, dx2, ddy, g);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
