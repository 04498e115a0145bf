// CUDA elementwise ops (src/cuda/activations.h). Two grid-stride kernels, one input or two, take the op as an
// fp32 functor; T = float, bf16 or fp16 is loaded, widened to fp32, and the result rounded once to T on store. When
// every pointer is 16-byte aligned each thread moves 16-byte vectors (4 floats or 8 bf16) and a scalar loop
// does the n % width tail, otherwise the whole range goes scalar. 256 threads per block, at most one full wave.
//
// Numerics against the CPU (which evaluates transcendentals in double and rounds once to fp32):
//   relu, add, scale: the same single fp32 operation, bit-identical for float; for bf16 the inputs are bf16
//         values, so the result is the CPU's fp32 result rounded to bf16, bit for bit.
//   tanh: tanhf (2 ulp); tanh backward as (1 - y)(1 + y), where 1 - y is exact for |y| >= 1/2, so no
//         cancellation near saturation (a few ulp).
//   GELU: Phi(x) = erfc(-x / sqrt 2) / 2 with erfcf instead of (1 + erff(.)) / 2, so the left tail keeps its
//         relative accuracy (1 + erf cancels to nothing below x ~ -4).
//   GELU-tanh: (1 + tanh u) / 2 = sigmoid(2u), evaluated from exp(-2|u|) <= 1 (no overflow, no cancellation).
// The fp32 argument rounding makes the tails a few ulp * u^2 off; tests allow 1e-5 relative, 1e-6 absolute
// for float. bf16 adds the final rounding (half a bf16 ulp, <= 2^-8 relative), which can land one bf16 ulp
// away from the rounded CPU value when the fp32 results straddle a rounding boundary.
#include <cuda_runtime.h>

#include <string>

#include "scalebench/error.h"
#include "src/cuda/activations.h"
#include "src/cuda/cuda_bindings.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/element.h"
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

struct LeakyReluForward {
  float slope;
  __device__ float operator()(float x) const { return x > 0.0f ? x : slope * x; }
};

struct LeakyReluBackward {  // (y, dy) -> dx
  float slope;
  __device__ float operator()(float y, float dy) const { return y > 0.0f ? dy : slope * dy; }
};

struct SigmoidForward {
  __device__ float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
};

struct SigmoidBackward {  // (y, dy) -> dy y (1 - y)
  __device__ float operator()(float y, float dy) const { return dy * y * (1.0f - y); }
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

// One 16-byte access: 4 floats or 8 bf16.
template <typename T>
using Vector16 = Pack<T, kElementsPer16Bytes<T>>;

// y = op(x). No __restrict__: y may be x (each thread reads its element or vector before writing it).
template <typename T, bool kVector, typename Op>
__global__ void unary_kernel(const T* x, T* y, int64_t n, Op op) {
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if constexpr (kVector) {
    const int64_t vectors = n / kWidth;
    const Vector16<T>* xv = reinterpret_cast<const Vector16<T>*>(x);
    Vector16<T>* yv = reinterpret_cast<Vector16<T>*>(y);
    for (int64_t v = thread; v < vectors; v += stride) {
      const Vector16<T> in = xv[v];
      Vector16<T> out;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) out.element[j] = from_float<T>(op(to_float(in.element[j])));
      yv[v] = out;
    }
    scalar_from = vectors * kWidth;
  }
  for (int64_t i = scalar_from + thread; i < n; i += stride) y[i] = from_float<T>(op(to_float(x[i])));
}

// y = op(a, b), elementwise; y may be a or b.
template <typename T, bool kVector, typename Op>
__global__ void binary_kernel(const T* a, const T* b, T* y, int64_t n, Op op) {
  constexpr int kWidth = kElementsPer16Bytes<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if constexpr (kVector) {
    const int64_t vectors = n / kWidth;
    const Vector16<T>* av = reinterpret_cast<const Vector16<T>*>(a);
    const Vector16<T>* bv = reinterpret_cast<const Vector16<T>*>(b);
    Vector16<T>* yv = reinterpret_cast<Vector16<T>*>(y);
    for (int64_t v = thread; v < vectors; v += stride) {
      const Vector16<T> p = av[v];
      const Vector16<T> q = bv[v];
      Vector16<T> out;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) {
        out.element[j] = from_float<T>(op(to_float(p.element[j]), to_float(q.element[j])));
      }
      yv[v] = out;
    }
    scalar_from = vectors * kWidth;
  }
  for (int64_t i = scalar_from + thread; i < n; i += stride) y[i] = from_float<T>(op(to_float(a[i]), to_float(b[i])));
}

// ---------------------------------------------------------------- launchers

void check_count(const char* op, int64_t n) {
  if (n < 0) throw UsageError(std::string("cuda::") + op + ": negative element count " + std::to_string(n));
}

template <typename T, typename Op>
void launch_unary(const char* name, const T* x, T* y, int64_t n, Op op, cudaStream_t stream) {
  check_count(name, n);
  if (n == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (detail::aligned_16(x) && detail::aligned_16(y)) {
    unary_kernel<T, true><<<detail::grid_stride_blocks((n + kWidth - 1) / kWidth, kThreads), kThreads, 0, stream>>>(
        x, y, n, op);
  } else {
    unary_kernel<T, false><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(x, y, n, op);
  }
  SB_CUDA_CHECK_LAUNCH();
}

template <typename T, typename Op>
void launch_binary(const char* name, const T* a, const T* b, T* y, int64_t n, Op op, cudaStream_t stream) {
  check_count(name, n);
  if (n == 0) return;
  constexpr int kWidth = kElementsPer16Bytes<T>;
  if (detail::aligned_16(a) && detail::aligned_16(b) && detail::aligned_16(y)) {
    binary_kernel<T, true><<<detail::grid_stride_blocks((n + kWidth - 1) / kWidth, kThreads), kThreads, 0, stream>>>(
        a, b, y, n, op);
  } else {
    binary_kernel<T, false><<<detail::grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(a, b, y, n, op);
  }
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_unary("gelu_forward", x, y, n, GeluForward{}, stream);
}

template <typename T>
void gelu_backward(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_binary("gelu_backward", x, dy, dx, n, GeluBackward{}, stream);
}

template <typename T>
void gelu_tanh_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_unary("gelu_tanh_forward", x, y, n, GeluTanhForward{}, stream);
}

template <typename T>
void gelu_tanh_backward(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_binary("gelu_tanh_backward", x, dy, dx, n, GeluTanhBackward{}, stream);
}

template <typename T>
void relu_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_unary("relu_forward", x, y, n, ReluForward{}, stream);
}

template <typename T>
void relu_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_binary("relu_backward", y, dy, dx, n, ReluBackward{}, stream);
}

template <typename T>
void leaky_relu_forward(const T* x, T* y, int64_t n, float slope, cudaStream_t stream) {
  launch_unary("leaky_relu_forward", x, y, n, LeakyReluForward{slope}, stream);
}

template <typename T>
void leaky_relu_backward(const T* y, const T* dy, T* dx, int64_t n, float slope, cudaStream_t stream) {
  launch_binary("leaky_relu_backward", y, dy, dx, n, LeakyReluBackward{slope}, stream);
}

template <typename T>
void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_unary("sigmoid_forward", x, y, n, SigmoidForward{}, stream);
}

template <typename T>
void sigmoid_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_binary("sigmoid_backward", y, dy, dx, n, SigmoidBackward{}, stream);
}

template <typename T>
void tanh_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_unary("tanh_forward", x, y, n, TanhForward{}, stream);
}

template <typename T>
void tanh_backward(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_binary("tanh_backward", y, dy, dx, n, TanhBackward{}, stream);
}

template <typename T>
void add_forward(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream) {
  launch_binary("add_forward", a, b, y, n, Add{}, stream);
}

template <typename T>
void scale_forward(const T* x, T* y, int64_t n, float scale, cudaStream_t stream) {
  launch_unary("scale_forward", x, y, n, Scale{scale}, stream);
}

#define SB_ACTIVATIONS(T)                                                             \
  template void gelu_forward<T>(const T*, T*, int64_t, cudaStream_t);                 \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t);      \
  template void gelu_tanh_forward<T>(const T*, T*, int64_t, cudaStream_t);            \
  template void gelu_tanh_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t); \
  template void relu_forward<T>(const T*, T*, int64_t, cudaStream_t);                 \
  template void relu_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t);      \
  template void leaky_relu_forward<T>(const T*, T*, int64_t, float, cudaStream_t);    \
  template void leaky_relu_backward<T>(const T*, const T*, T*, int64_t, float, cudaStream_t); \
  template void sigmoid_forward<T>(const T*, T*, int64_t, cudaStream_t);              \
  template void sigmoid_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t);   \
  template void tanh_forward<T>(const T*, T*, int64_t, cudaStream_t);                 \
  template void tanh_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t);      \
  template void add_forward<T>(const T*, const T*, T*, int64_t, cudaStream_t);        \
  template void scale_forward<T>(const T*, T*, int64_t, float, cudaStream_t);
SB_INSTANTIATE_FOR_ELEMENTS(SB_ACTIVATIONS)
#undef SB_ACTIVATIONS

}  // namespace sb::cuda

// The activations family's node bindings (src/cuda/cuda_bindings.h).
namespace sb::cuda_binding {

void bind_activations_cuda(CudaKernelTable& table) {
  add_kernels(table, {
      {"add", SB_TYPED({
         const T* b = e.at<T>(n.inputs[1]);
         if (n.attributes.count("weight_b") != 0) {  // a weighted sum of losses: a + w b
           cuda::scale_forward(b, e.at<T>(n.outputs[0]), size_attr(n, "n"), float_attr(n, "weight_b"), e.stream());
           b = e.at<T>(n.outputs[0]);
         }
         cuda::add_forward(e.at<T>(n.inputs[0]), b, e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream());
       })},
      {"add_n", SB_TYPED({  // the first two terms in one pass (no copy), then one pass per further term
         if (n.inputs.size() == 1) return copy(e, n.outputs[0], n.inputs[0]);
         cuda::add_forward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                           e.stream());
         for (size_t i = 2; i < n.inputs.size(); ++i) {
           cuda::add_forward(e.at<T>(n.outputs[0]), e.at<T>(n.inputs[i]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                             e.stream());
         }
       })},
      {"scale", SB_TYPED(cuda::scale_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                             float_attr(n, "factor"), e.stream()))},
      {"gelu", SB_TYPED(cuda::gelu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"relu", SB_TYPED(cuda::relu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"tanh", SB_TYPED(cuda::tanh_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                           e.stream()))},
      {"gelu_backward", SB_TYPED(cuda::gelu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"relu_backward", SB_TYPED(cuda::relu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"tanh_backward", SB_TYPED(cuda::tanh_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                     e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
      {"leaky_relu", SB_TYPED(cuda::leaky_relu_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                       float_attr(n, "slope"), e.stream()))},
      {"leaky_relu_backward", SB_TYPED(cuda::leaky_relu_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                                 e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                                 float_attr(n, "slope"), e.stream()))},
      {"sigmoid", SB_TYPED(cuda::sigmoid_forward(e.at<T>(n.inputs[0]), e.at<T>(n.outputs[0]), size_attr(n, "n"),
                                                 e.stream()))},
      {"sigmoid_backward", SB_TYPED(cuda::sigmoid_backward(e.at<T>(n.inputs[0]), e.at<T>(n.inputs[1]),
                                                           e.at<T>(n.outputs[0]), size_attr(n, "n"), e.stream()))},
  });
}

}  // namespace sb::cuda_binding
