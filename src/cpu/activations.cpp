// CPU reference elementwise ops (src/cpu/activations.h). The GELU derivatives are written out from the
// forward formulas; tests check them against finite differences.
#include "src/cpu/activations.h"

#include <cmath>
#include <cstring>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1 / sqrt(2), erf argument scale
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi), normal density
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi), tanh-approximation scale
constexpr double kGeluCubic = 0.044715;                  // cubic coefficient of the tanh approximation

void check_count(const char* op, int64_t n) {
  if (n < 0) throw UsageError(std::string(op) + ": negative element count " + std::to_string(n));
}

}  // namespace

void gelu_forward(const float* x, float* y, int64_t n) {
  check_count("gelu_forward", n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * kInvSqrt2)));
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  check_count("gelu_backward", n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
    dx[i] = static_cast<float>(dy[i] * (cdf + v * pdf));
  }
}

void gelu_tanh_forward(const float* x, float* y, int64_t n) {
  check_count("gelu_tanh_forward", n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
    y[i] = static_cast<float>(0.5 * v * (1.0 + t));
  }
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n) {
  check_count("gelu_tanh_backward", n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
    const double du = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * v * v);  // d(tanh argument)/dx
    dx[i] = static_cast<float>(dy[i] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du));
  }
}

void relu_forward(const float* x, float* y, int64_t n) {
  check_count("relu_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
  check_count("relu_backward", n);
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void leaky_relu_forward(const float* x, float* y, int64_t n, float slope) {
  check_count("leaky_relu_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

void leaky_relu_backward(const float* y, const float* dy, float* dx, int64_t n, float slope) {
  check_count("leaky_relu_backward", n);
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : slope * dy[i];
}

void sigmoid_forward(const float* x, float* y, int64_t n) {
  check_count("sigmoid_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
}

void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n) {
  check_count("sigmoid_backward", n);
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(double(dy[i]) * y[i] * (1.0 - double(y[i])));
}

void tanh_forward(const float* x, float* y, int64_t n) {
  check_count("tanh_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(std::tanh(static_cast<double>(x[i])));
}

void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) {
  check_count("tanh_backward", n);
  for (int64_t i = 0; i < n; ++i) {
    const double t = y[i];
    dx[i] = static_cast<float>(dy[i] * (1.0 - t * t));
  }
}

void add_forward(const float* a, const float* b, float* y, int64_t n) {
  check_count("add_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void scale_forward(const float* x, float* y, int64_t n, float scale) {
  check_count("scale_forward", n);
  for (int64_t i = 0; i < n; ++i) y[i] = scale * x[i];
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_activations_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"add",
       [](CpuExecutor& e, const Node& node) {
         float* out = e.f32(node.outputs[0]);
         const float* b = e.f32(node.inputs[1]);
         const int64_t n = size_attr(node, "n");
         if (node.attributes.count("weight_b") != 0) {  // a weighted sum of losses: a + w b
           cpu::scale_forward(b, out, n, float_attr(node, "weight_b"));
           b = out;
         }
         cpu::add_forward(e.f32(node.inputs[0]), b, out, n);
       }},
      {"add_n",
       [](CpuExecutor& e, const Node& node) {
         const int64_t n = size_attr(node, "n");
         float* out = e.f32(node.outputs[0]);
         std::memcpy(out, e.f32(node.inputs[0]), sizeof(float) * n);
         for (size_t i = 1; i < node.inputs.size(); ++i) cpu::add_forward(out, e.f32(node.inputs[i]), out, n);
       }},
      {"scale",
       [](CpuExecutor& e, const Node& n) {
         cpu::scale_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "factor"));
       }},
      {"gelu",
       [](CpuExecutor& e, const Node& n) {
         cpu::gelu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"relu",
       [](CpuExecutor& e, const Node& n) {
         cpu::relu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"tanh",
       [](CpuExecutor& e, const Node& n) {
         cpu::tanh_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"gelu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::gelu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"relu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::relu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"tanh_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::tanh_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"leaky_relu",
       [](CpuExecutor& e, const Node& n) {
         cpu::leaky_relu_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"), float_attr(n, "slope"));
       }},
      {"leaky_relu_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::leaky_relu_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"),
                                  float_attr(n, "slope"));
       }},
      {"sigmoid",
       [](CpuExecutor& e, const Node& n) {
         cpu::sigmoid_forward(e.f32(n.inputs[0]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
      {"sigmoid_backward",
       [](CpuExecutor& e, const Node& n) {
         cpu::sigmoid_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "n"));
       }},
  });
}

}  // namespace sb::detail
