// CPU reference of the gated linear unit (sb::cpu), ConvS2S's activation after every convolution (fairseq
// F.glu(x, dim=-1)): the last dimension of x is split into halves a and b, y = a · sigmoid(b). The CUDA device
// has the same names (src/cuda/glu.h). Tests: tests/unit/test_cpu_convs2s_ops.cpp (suite CpuGlu).
#pragma once

#include <cstdint>

namespace sb::cpu {

// x (rows, 2 · cols) -> y (rows, cols): y[r, c] = x[r, c] · sigmoid(x[r, cols + c]), evaluated in double and
// rounded once. y must not overlap x (it is half its size).
void glu_forward(const float* x, float* y, int64_t rows, int64_t cols);

// dx (rows, 2 · cols) from x and dy (rows, cols): da = dy · s, db = dy · a · s · (1 − s) with s = sigmoid(b).
// Needs the input x (neither half can be recovered from y). Overwrites dx.
void glu_backward(const float* x, const float* dy, float* dx, int64_t rows, int64_t cols);

}  // namespace sb::cpu
