// BatchNorm kernels (batchnorm.h). Partial sums: a block of 32 x 8 threads covers 32 channels (one warp reads
// 32 consecutive channels of a row: coalesced in NHWC) and one chunk of rows, 8 rows at a time; the 8 row
// lanes are summed in shared memory and one partial per (chunk, channel) is written. Statistics groups: the
// launchers run the kernels once per group with pointers offset to its rows and statistics.
#include "src/cuda/batchnorm.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"
#include "src/core/ops/batchnorm.h"

namespace sb::cuda {
namespace {

constexpr int kChannelsPerBlock = 32;
constexpr int kRowLanes = 8;
constexpr int kThreads = 256;

__device__ inline float activate(float z, int activation, float slope) {
  if (activation == 0 || z > 0.0f) return z;
  return activation == 1 ? 0.0f : slope * z;
}

__device__ inline float derivative_from_output(float y, int activation, float slope) {
  if (activation == 0 || y > 0.0f) return 1.0f;
  return activation == 1 ? 0.0f : slope;
}

// The finalize kernels' blocks: 32 channels x kChunkLanes lanes, each lane summing every kChunkLanes-th chunk
// of its channel, then lane 0 the lanes in order (fixed order: deterministic). One thread per channel walking
// all 1,024 chunks serially made the two finalize kernels about half of YOLOv3's BatchNorm time on H200 (27 of
// a 48 ms step in BatchNorm, 72 layers of 32-1,024 channels).
constexpr int kChunkLanes = 32;

// Returns this thread's channel after lane 0 holds the channel's totals in *a, *b; -1 for the other lanes and
// for channels past the end. Launch: grid ceil(channels / 32), block (32, kChunkLanes).
__device__ int64_t sum_chunks(const float* __restrict__ partial, int64_t chunks, int64_t channels, double* a,
                              double* b) {
  __shared__ double s1[kChunkLanes][kChannelsPerBlock], s2[kChunkLanes][kChannelsPerBlock];
  const int64_t c = int64_t(blockIdx.x) * kChannelsPerBlock + threadIdx.x;
  double x = 0, y = 0;
  if (c < channels) {
    for (int64_t k = threadIdx.y; k < chunks; k += kChunkLanes) {
      x += partial[(k * channels + c) * 2];
      y += partial[(k * channels + c) * 2 + 1];
    }
  }
  s1[threadIdx.y][threadIdx.x] = x;
  s2[threadIdx.y][threadIdx.x] = y;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return -1;
  for (int lane = 1; lane < kChunkLanes; ++lane) x += s1[lane][threadIdx.x], y += s2[lane][threadIdx.x];
  *a = x, *b = y;
  return c;
}

// partial[(chunk * channels + c) * 2 + {0, 1}] = Σ v, Σ v² over the chunk's rows, v = x - x[0, c].
template <typename T>
__global__ void forward_partial_kernel(const T* __restrict__ x, float* __restrict__ partial, int64_t rows,
                                       int64_t channels, int64_t rows_per_chunk) {
  __shared__ float s1[kRowLanes][kChannelsPerBlock], s2[kRowLanes][kChannelsPerBlock];
  const int64_t c = int64_t(blockIdx.y) * kChannelsPerBlock + threadIdx.x;
  const int64_t first = int64_t(blockIdx.x) * rows_per_chunk;
  const int64_t last = min(rows, first + rows_per_chunk);
  float a = 0.0f, b = 0.0f;
  if (c < channels) {
    const float shift = to_float(x[c]);
    for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
      const float v = to_float(x[r * channels + c]) - shift;
      a += v;
      b += v * v;
    }
  }
  s1[threadIdx.y][threadIdx.x] = a;
  s2[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int lane = 1; lane < kRowLanes; ++lane) a += s1[lane][threadIdx.x], b += s2[lane][threadIdx.x];
    partial[(blockIdx.x * channels + c) * 2] = a;
    partial[(blockIdx.x * channels + c) * 2 + 1] = b;
  }
}

// running_mean null: the running statistics stay (groups after the first).
template <typename T>
__global__ void forward_finalize_kernel(const T* __restrict__ x, const float* __restrict__ partial, int64_t chunks,
                                        int64_t rows, int64_t channels, float epsilon, float momentum,
                                        float* __restrict__ mean, float* __restrict__ invstd,
                                        float* __restrict__ running_mean, float* __restrict__ running_var) {
  double a = 0, b = 0;
  const int64_t c = sum_chunks(partial, chunks, channels, &a, &b);
  if (c < 0) return;
  const double n = double(rows);
  const double shifted_mean = a / n;
  const double var = max(b / n - shifted_mean * shifted_mean, 0.0);  // biased
  const double mu = double(to_float(x[c])) + shifted_mean;
  mean[c] = float(mu);
  invstd[c] = float(1.0 / sqrt(var + double(epsilon)));
  if (running_mean == nullptr) return;
  running_mean[c] = float((1.0 - momentum) * running_mean[c] + double(momentum) * mu);
  running_var[c] = float((1.0 - momentum) * running_var[c] + double(momentum) * var * n / (n - 1.0));
}

// The elementwise kernels index with Index = uint32_t when the tensor allows: the channel of element i is
// i % channels, and a 64-bit remainder per element costs more than the element's memory traffic.
template <typename T, typename Index>
__global__ void forward_apply_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                                     const float* __restrict__ beta, const float* __restrict__ mean,
                                     const float* __restrict__ invstd, T* __restrict__ y, Index total,
                                     Index channels, int activation, float slope) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    const Index c = i % channels;
    const float z = (to_float(x[i]) - mean[c]) * invstd[c] * gamma[c] + beta[c];
    y[i] = from_float<T>(activate(z, activation, slope));
  }
}

// partial = Σ dz, Σ dz · xhat per (chunk, channel), dz = dy · act'(y).
template <typename T>
__global__ void backward_partial_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                                        const float* __restrict__ mean, const float* __restrict__ invstd,
                                        float* __restrict__ partial, int64_t rows, int64_t channels,
                                        int64_t rows_per_chunk, int activation, float slope) {
  __shared__ float s1[kRowLanes][kChannelsPerBlock], s2[kRowLanes][kChannelsPerBlock];
  const int64_t c = int64_t(blockIdx.y) * kChannelsPerBlock + threadIdx.x;
  const int64_t first = int64_t(blockIdx.x) * rows_per_chunk;
  const int64_t last = min(rows, first + rows_per_chunk);
  float a = 0.0f, b = 0.0f;
  if (c < channels) {
    const float mu = mean[c], inv = invstd[c];
    for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
      const int64_t i = r * channels + c;
      const float dz = to_float(dy[i]) * derivative_from_output(to_float(y[i]), activation, slope);
      a += dz;
      b += dz * (to_float(x[i]) - mu) * inv;
    }
  }
  s1[threadIdx.y][threadIdx.x] = a;
  s2[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int lane = 1; lane < kRowLanes; ++lane) a += s1[lane][threadIdx.x], b += s2[lane][threadIdx.x];
    partial[(blockIdx.x * channels + c) * 2] = a;
    partial[(blockIdx.x * channels + c) * 2 + 1] = b;
  }
}

__global__ void backward_finalize_kernel(const float* __restrict__ partial, int64_t chunks, int64_t channels,
                                         float* __restrict__ dgamma, float* __restrict__ dbeta) {
  double a = 0, b = 0;
  const int64_t c = sum_chunks(partial, chunks, channels, &a, &b);
  if (c < 0) return;
  dbeta[c] = float(a);
  dgamma[c] = float(b);
}

// dbeta[c], dgamma[c] = Σ over groups of per_group (groups, 2, channels) = (dbeta_g, dgamma_g), in group order.
__global__ void sum_over_groups_kernel(const float* __restrict__ per_group, int64_t groups, int64_t channels,
                                       float* __restrict__ dgamma, float* __restrict__ dbeta) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  double a = 0, b = 0;
  for (int64_t g = 0; g < groups; ++g) {
    a += per_group[(2 * g) * channels + c];
    b += per_group[(2 * g + 1) * channels + c];
  }
  dbeta[c] = float(a);
  dgamma[c] = float(b);
}

template <typename T, typename Index>
__global__ void backward_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                                   const float* __restrict__ gamma, const float* __restrict__ mean,
                                   const float* __restrict__ invstd, const float* __restrict__ dgamma,
                                   const float* __restrict__ dbeta, T* __restrict__ dx, Index total, int64_t rows,
                                   Index channels, int activation, float slope) {
  const float inv_rows = 1.0f / float(rows);
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    const Index c = i % channels;
    const float dz = to_float(dy[i]) * derivative_from_output(to_float(y[i]), activation, slope);
    const float xhat = (to_float(x[i]) - mean[c]) * invstd[c];
    dx[i] = from_float<T>(gamma[c] * invstd[c] * (dz - dbeta[c] * inv_rows - xhat * dgamma[c] * inv_rows));
  }
}

void check(int64_t rows, int64_t channels, int64_t groups, cpu::BatchNormActivation activation, float slope) {
  SB_CHECK(groups >= 1 && rows % groups == 0, "batchnorm: the groups must divide the rows");
  SB_CHECK(rows / groups >= 2 && channels > 0, "batchnorm: needs rows >= 2 per group and channels > 0");
  SB_CHECK(activation != cpu::BatchNormActivation::kLeakyRelu || slope > 0, "batchnorm: LeakyReLU slope must be > 0");
}

// i + grid stride stays below 2^32 for every i < total (the stride is below 2^31 too).
bool fits_32_bits(int64_t total) { return total < (int64_t(1) << 31); }

dim3 partial_grid(int64_t rows, int64_t channels) {
  return dim3(static_cast<unsigned>(batchnorm_chunks(rows)),
              static_cast<unsigned>((channels + kChannelsPerBlock - 1) / kChannelsPerBlock));
}

int64_t rows_per_chunk(int64_t rows) {
  const int64_t chunks = batchnorm_chunks(rows);
  return (rows + chunks - 1) / chunks;
}

}  // namespace

template <typename T>
void batchnorm_forward(const T* x, const float* gamma, const float* beta, T* y, float* mean, float* invstd,
                       float* running_mean, float* running_var, int64_t rows, int64_t channels, int64_t groups,
                       float epsilon, float momentum, cpu::BatchNormActivation activation, float slope,
                       float* workspace, cudaStream_t stream) {
  check(rows, channels, groups, activation, slope);
  const int64_t n = rows / groups, total = n * channels;
  const dim3 block(kChannelsPerBlock, kRowLanes);
  const int finalize_blocks = static_cast<int>((channels + kChannelsPerBlock - 1) / kChannelsPerBlock);
  const dim3 finalize_block(kChannelsPerBlock, kChunkLanes);
  for (int64_t g = 0; g < groups; ++g) {  // one group's rows after another, sharing the partial sums
    const T* gx = x + g * total;
    float* g_mean = mean + g * channels;
    float* g_invstd = invstd + g * channels;
    forward_partial_kernel<<<partial_grid(n, channels), block, 0, stream>>>(gx, workspace, n, channels,
                                                                            rows_per_chunk(n));
    SB_CUDA_CHECK_LAUNCH();
    forward_finalize_kernel<<<finalize_blocks, finalize_block, 0, stream>>>(
        gx, workspace, batchnorm_chunks(n), n, channels, epsilon, momentum, g_mean, g_invstd,
        g == 0 ? running_mean : nullptr, g == 0 ? running_var : nullptr);  // running statistics: group 0 only
    SB_CUDA_CHECK_LAUNCH();
    const unsigned blocks = detail::grid_stride_blocks(total, kThreads);
    if (fits_32_bits(total)) {
      forward_apply_kernel<T, uint32_t><<<blocks, kThreads, 0, stream>>>(
          gx, gamma, beta, g_mean, g_invstd, y + g * total, uint32_t(total), uint32_t(channels),
          static_cast<int>(activation), slope);
    } else {
      forward_apply_kernel<T, int64_t><<<blocks, kThreads, 0, stream>>>(
          gx, gamma, beta, g_mean, g_invstd, y + g * total, total, channels, static_cast<int>(activation), slope);
    }
    SB_CUDA_CHECK_LAUNCH();
  }
}

template <typename T>
void batchnorm_backward(const T* dy, const T* x, const T* y, const float* gamma, const float* mean,
                        const float* invstd, T* dx, float* dgamma, float* dbeta, int64_t rows, int64_t channels,
                        int64_t groups, cpu::BatchNormActivation activation, float slope, float* workspace,
                        cudaStream_t stream) {
  check(rows, channels, groups, activation, slope);
  const int64_t n = rows / groups, total = n * channels;
  const dim3 block(kChannelsPerBlock, kRowLanes);
  const int per_channel_blocks = static_cast<int>((channels + kThreads - 1) / kThreads);
  const int finalize_blocks = static_cast<int>((channels + kChannelsPerBlock - 1) / kChannelsPerBlock);
  const dim3 finalize_block(kChannelsPerBlock, kChunkLanes);
  // One group: its sums are the outputs. Several: each group's (dbeta_g, dgamma_g) after the partial sums.
  float* per_group = workspace + batchnorm_partial_floats(rows, channels, groups);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t at = g * total;
    const float* g_mean = mean + g * channels;
    const float* g_invstd = invstd + g * channels;
    float* g_dbeta = groups == 1 ? dbeta : per_group + (2 * g) * channels;
    float* g_dgamma = groups == 1 ? dgamma : per_group + (2 * g + 1) * channels;
    backward_partial_kernel<<<partial_grid(n, channels), block, 0, stream>>>(
        dy + at, x + at, y + at, g_mean, g_invstd, workspace, n, channels, rows_per_chunk(n),
        static_cast<int>(activation), slope);
    SB_CUDA_CHECK_LAUNCH();
    backward_finalize_kernel<<<finalize_blocks, finalize_block, 0, stream>>>(workspace, batchnorm_chunks(n), channels,
                                                                          g_dgamma, g_dbeta);
    SB_CUDA_CHECK_LAUNCH();
    const unsigned blocks = detail::grid_stride_blocks(total, kThreads);
    if (fits_32_bits(total)) {
      backward_dx_kernel<T, uint32_t><<<blocks, kThreads, 0, stream>>>(
          dy + at, x + at, y + at, gamma, g_mean, g_invstd, g_dgamma, g_dbeta, dx + at, uint32_t(total), n,
          uint32_t(channels), static_cast<int>(activation), slope);
    } else {
      backward_dx_kernel<T, int64_t><<<blocks, kThreads, 0, stream>>>(
          dy + at, x + at, y + at, gamma, g_mean, g_invstd, g_dgamma, g_dbeta, dx + at, total, n, channels,
          static_cast<int>(activation), slope);
    }
    SB_CUDA_CHECK_LAUNCH();
  }
  if (groups > 1) {
    sum_over_groups_kernel<<<per_channel_blocks, kThreads, 0, stream>>>(per_group, groups, channels, dgamma, dbeta);
    SB_CUDA_CHECK_LAUNCH();
  }
}

#define SB_BATCHNORM(T)                                                                                              \
  template void batchnorm_forward<T>(const T*, const float*, const float*, T*, float*, float*, float*, float*,      \
                                     int64_t, int64_t, int64_t, float, float, cpu::BatchNormActivation, float,       \
                                     float*, cudaStream_t);                                                          \
  template void batchnorm_backward<T>(const T*, const T*, const T*, const float*, const float*, const float*, T*,   \
                                      float*, float*, int64_t, int64_t, int64_t, cpu::BatchNormActivation, float,    \
                                      float*, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_BATCHNORM)

}  // namespace sb::cuda

// The batchnorm family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_batchnorm_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      // BatchNorm (src/cuda/batchnorm.h): activations in T, statistics, parameters and running state fp32; the
      // node's uint8 workspace holds the partial sums (and, with statistics groups, each group's dgamma, dbeta).
      {"batchnorm", SB_TYPED({
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::batchnorm_forward(e.at<T>(in[0]), e.at<float>(in[1]), e.at<float>(in[2]), e.at<T>(out[0]),
                                 e.at<float>(out[1]), e.at<float>(out[2]), e.at<float>(in[3]), e.at<float>(in[4]),
                                 size_attr(n, "rows"), size_attr(n, "channels"), size_attr(n, "groups"),
                                 float_attr(n, "epsilon"), float_attr(n, "momentum"),
                                 static_cast<cpu::BatchNormActivation>(size_attr(n, "activation")),
                                 float_attr(n, "slope"), reinterpret_cast<float*>(e.u8(out[3])), e.stream());
       })},
      {"batchnorm_backward", SB_TYPED({
         const auto& in = n.inputs;
         const auto& out = n.outputs;
         cuda::batchnorm_backward(e.at<T>(in[0]), e.at<T>(in[1]), e.at<T>(in[2]), e.at<float>(in[3]),
                                  e.at<float>(in[4]), e.at<float>(in[5]), e.at<T>(out[0]), e.at<float>(out[1]),
                                  e.at<float>(out[2]), size_attr(n, "rows"), size_attr(n, "channels"),
                                  size_attr(n, "groups"),
                                  static_cast<cpu::BatchNormActivation>(size_attr(n, "activation")),
                                  float_attr(n, "slope"), reinterpret_cast<float*>(e.u8(out[3])), e.stream());
       })},
  });
}

}  // namespace sb::cuda_binding
