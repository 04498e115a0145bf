// CUDA elementwise ops (src/cuda/activations.h). Two grid-stride kernels, one input or two, take the op as a
// functor; when every pointer is 16-byte aligned each thread moves float4 vectors and a scalar loop does the
// n % 4 tail, otherwise the whole range goes scalar. 256 threads per block, at most one full wave of blocks.
//
// Numerics against the CPU (which evaluates transcendentals in double and rounds once):
//   relu, add, scale: the same single fp32 operation, bit-identical.
//   tanh: tanhf (2 ulp); tanh backward as (1 - y)(1 + y), where 1 - y is exact for |y| >= 1/2, so no
//         cancellation near saturation (a few ulp).
//   GELU: Phi(x) = erfc(-x / sqrt 2) / 2 with erfcf instead of (1 + erff(.)) / 2, so the left tail keeps its
//         relative accuracy (1 + erf cancels to nothing below x ~ -4).
//   GELU-tanh: (1 + tanh u) / 2 = sigmoid(2u), evaluated from exp(-2|u|) <= 1 (no overflow, no cancellation).
// The fp32 argument rounding makes the tails a few ulp * u^2 off; tests allow 1e-5 relative, 1e-6 absolute.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/activations.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/grid.h"

namespace sb::cuda {
namespace {

constexpr int kThreads = 256;

constexpr float kInvSqrt2 = 0.70710678118654752440f;     // 1 / sqrt(2), erf argument scale
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;   // 1 / sqrt(2 pi), normal density
constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // sqrt(2 / pi), tanh-approximation scale
constexpr float kGeluCubic = 0.044715f;                  // cubic coefficient of the tanh approximation

// ---------------------------------------------------------------- the ops, one element each

struct GeluForward {
  __device__ float operator()(float x) const { return 0.5f * x * erfcf(-x * kInvSqrt2); }
};

struct GeluBackward {  // (x, dy) -> dx = dy (Phi(x) + x phi(x))
  __device__ float operator()(float x, float dy) const {
    const float cdf = 0.5f * erfcf(-x * kInvSqrt2);
    const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};

// s = sigmoid(2u) = (1 + tanh u) / 2 and 1 - s, from a = exp(-2|u|) in (0, 1].
struct Sigmoid2 {
  float s, one_minus_s;
};
__device__ inline Sigmoid2 gelu_tanh_sigmoid(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float a = expf(-2.0f * fabsf(u));
  const float r = 1.0f / (1.0f + a);
  return u >= 0.0f ? Sigmoid2{r, a * r} : Sigmoid2{a * r, r};
}

struct GeluTanhForward {  // 0.5 x (1 + tanh u) = x s
  __device__ float operator()(float x) const { return x * gelu_tanh_sigmoid(x).s; }
};

struct GeluTanhBackward {  // dy (s + 0.5 x (1 - tanh^2 u) u') with 1 - tanh^2 u = 4 s (1 - s)
  __device__ float operator()(float x, float dy) const {
    const Sigmoid2 g = gelu_tanh_sigmoid(x);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * (g.s + 2.0f * x * g.s * g.one_minus_s * du);
  }
};

struct ReluForward {
  __device__ float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};

struct ReluBackward {  // (y, dy) -> dx
  __device__ float operator()(float y, float dy) const { return y > 0.0f ? dy : 0.0f; }
};

struct TanhForward {
  __device__ float operator()(float x) const { return tanhf(x); }
};

struct TanhBackward {  // (y, dy) -> dy (1 - y^2)
  __device__ float operator()(float y, float dy) const { return dy * ((1.0f - y) * (1.0f + y)); }
};

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct Scale {
  float factor;
  __device__ float operator()(float x) const { return factor * x; }
};

// ---------------------------------------------------------------- kernels

// y = op(x). No __restrict__: y may be x (each thread reads its element or vector before writing it).
template <bool kVector, typename Op>
__global__ void unary_kernel(const float* x, float* y, int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if constexpr (kVector) {
    const int64_t vectors = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t v = thread; v < vectors; v += stride) {
      const float4 a = x4[v];
      y4[v] = make_float4(op(a.x), op(a.y), op(a.z), op(a.w));
    }
    scalar_from = vectors * 4;
  }
  for (int64_t i = scalar_from + thread; i < n; i += stride) y[i] = op(x[i]);
}

// y = op(a, b), elementwise; y may be a or b.
template <bool kVector, typename Op>
__global__ void binary_kernel(const float* a, const float* b, float* y, int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if constexpr (kVector) {
    const int64_t vectors = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t v = thread; v < vectors; v += stride) {
      const float4 p = a4[v];
      const float4 q = b4[v];
      y4[v] = make_float4(op(p.x, q.x), op(p.y, q.y), op(p.z, q.z), op(p.w, q.w));
    }
    scalar_from = vectors * 4;
  }
  for (int64_t i = scalar_from + thread; i < n; i += stride) y[i] = op(a[i], b[i]);
}

// ---------------------------------------------------------------- launchers

void check_count(const char* op, int64_t n) {
  if (n < 0) throw UsageError(std::string("cuda::") + op + ": negative element count " + std::to_string(n));
}

template <typename Op>
void launch_unary(const char* name, const float* x, float* y, int64_t n, Op op, cudaStream_t stream) {
  check_count(name, n);
  if (n == 0) return;
  if (detail::aligned_16(x) && detail::aligned_16(y)) {
    unary_kernel<true><<<detail::grid_stride_blocks((n + 3) / 4, kThreads), kThreads, 0, stream>>>(x, y, n, op);
  } else {
    unary_kernel<false><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, y, n, op);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename Op>
void launch_binary(const char* name, const float* a, const float* b, float* y, int64_t n, Op op,
                   cudaStream_t stream) {
  check_count(name, n);
  if (n == 0) return;
  if (detail::aligned_16(a) && detail::aligned_16(b) && detail::aligned_16(y)) {
    binary_kernel<true><<<detail::grid_stride_blocks((n + 3) / 4, kThreads), kThreads, 0, stream>>>(a, b, y, n,
                                                                                                      op);
  } else {
    binary_kernel<false><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(a, b, y, n, op);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gelu_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  launch_unary("gelu_forward", x, y, n, GeluForward{}, stream);
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  launch_binary("gelu_backward", x, dy, dx, n, GeluBackward{}, stream);
}

void gelu_tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  launch_unary("gelu_tanh_forward", x, y, n, GeluTanhForward{}, stream);
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  launch_binary("gelu_tanh_backward", x, dy, dx, n, GeluTanhBackward{}, stream);
}

void relu_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  launch_unary("relu_forward", x, y, n, ReluForward{}, stream);
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  launch_binary("relu_backward", y, dy, dx, n, ReluBackward{}, stream);
}

void tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  launch_unary("tanh_forward", x, y, n, TanhForward{}, stream);
}

void tanh_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  launch_binary("tanh_backward", y, dy, dx, n, TanhBackward{}, stream);
}

void add_forward(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  launch_binary("add_forward", a, b, y, n, Add{}, stream);
}

void scale_forward(const float* x, float* y, int64_t n, float scale, cudaStream_t stream) {
  launch_unary("scale_forward", x, y, n, Scale{scale}, stream);
}

}  // namespace sb::cuda
