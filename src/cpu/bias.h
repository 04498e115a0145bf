// CPU reference bias ops (sb::cpu): the bias of every dense layer, added over the rows of a (rows, cols)
// activation, and its gradient, the column sums of dy. The CUDA device has the same names (plus a stream);
// tests: tests/unit/test_cpu_bias.cpp (suite CpuBias).
#pragma once

#include <cstdint>

namespace sb::cpu {

// x (rows, cols) += bias (cols) broadcast over rows, in place (the GEMM output it follows is dead after).
void bias_add_forward(float* x, const float* bias, int64_t rows, int64_t cols);

// dbias (cols) = sum over rows of dy (rows, cols), accumulated in double. Overwrites dbias: gradient outputs
// are overwritten throughout sb::cpu unless a function's name says `accumulate`. The gradient of x is dy
// itself (no function needed).
void bias_backward(const float* dy, float* dbias, int64_t rows, int64_t cols);

}  // namespace sb::cpu
