// CPU reference elementwise ops (sb::cpu): GELU (exact erf form and tanh approximation), ReLU, LeakyReLU,
// sigmoid, tanh, the
// residual add and a scalar scale, forward and backward, on n contiguous floats. Transcendentals are
// evaluated in double and rounded once. Tests: tests/unit/test_cpu_activations.cpp (suite CpuActivations).
#pragma once

#include <cstdint>

namespace sb::cpu {

// Conventions for every function here: y (or dx) may be the same array as x (or dy) — each element is read
// before it is written; gradient outputs are overwritten, never accumulated; n < 0 throws UsageError.
// The saved tensor each backward reads is the one a memory-frugal engine keeps anyway: the output y where
// the activation can be inverted for its derivative (ReLU, tanh — y also feeds the next GEMM's weight
// gradient, so the pre-activation can be freed), the input x where it cannot (both GELUs).

// GELU as in BERT and HF "gelu": y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
void gelu_forward(const float* x, float* y, int64_t n);
// dx = dy * (Phi(x) + x phi(x)). Needs the input x.
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

// GELU tanh approximation (HF "gelu_new", GPT-2): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu_tanh_forward(const float* x, float* y, int64_t n);
// Exact derivative of the approximation (not of erf GELU). Needs the input x.
void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t n);

// y = max(x, 0).
void relu_forward(const float* x, float* y, int64_t n);
// dx = dy where y > 0, else 0 (0 at x == 0, as PyTorch). Needs the output y; x works too (same sign test).
void relu_backward(const float* y, const float* dy, float* dx, int64_t n);

// LeakyReLU y = x for x > 0, slope · x otherwise (YOLOv3: slope 0.1), computed in fp32.
void leaky_relu_forward(const float* x, float* y, int64_t n, float slope);
// dx = dy where y > 0, slope · dy otherwise (the slope at 0, as PyTorch). Needs the output y and slope > 0.
void leaky_relu_backward(const float* y, const float* dy, float* dx, int64_t n, float slope);

// Logistic sigmoid y = 1 / (1 + exp(-x)).
void sigmoid_forward(const float* x, float* y, int64_t n);
// dx = dy · y (1 - y). Needs the output y.
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n);

// y = tanh(x).
void tanh_forward(const float* x, float* y, int64_t n);
// dx = dy * (1 - y^2). Needs the output y.
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n);

// Residual add y = a + b in fp32 (one rounding, bit-identical on every device). Its backward is the
// identity for both inputs: dy is passed on, no function needed.
void add_forward(const float* a, const float* b, float* y, int64_t n);

// y = scale * x in fp32 (the embedding's sqrt(d) factor, loss scaling). Its backward is the same call on
// dy: scale_forward(dy, dx, n, scale).
void scale_forward(const float* x, float* y, int64_t n, float scale);

}  // namespace sb::cpu
