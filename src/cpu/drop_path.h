// Drop-path (stochastic depth, NASNet's drop_path): whole samples of a branch are zeroed with probability p
// and the kept ones scaled by 1 / (1 - p). CPU reference on Philox-4x32-10 with the dropout mapping of
// src/cpu/dropout.h applied to the sample index n (block offset + n / 4, word n % 4), so the CUDA kernel draws
// the same samples. The backward pass is the same call on dy (same seed and offset: the same samples).
// Tests: tests/unit/test_cpu_drop_path.cpp (suite CpuDropPath).
#pragma once

#include <cstdint>

namespace sb::cpu {

// x, y: (batch, per_sample); y may be x. 0 <= p < 1.
void drop_path_forward(const float* x, float* y, int64_t batch, int64_t per_sample, float p, uint64_t seed,
                       uint64_t offset);

}  // namespace sb::cpu
