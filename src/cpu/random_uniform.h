// Uniform floats in [0, 1) from the engine's Philox stream (include/scalebench/philox.h), for ops that need
// the random numbers themselves rather than a dropout mask (the SAN turn mask). CPU reference; the CUDA
// kernel of the same name draws the same values bit for bit. Tests: unit_tests --gtest_filter='CpuRandom*'.
#pragma once

#include <cstdint>

namespace sb::cpu {

// values[i] = uniform_from_bits(philox4x32(philox_counter(offset + i / 4), philox_key(seed)).word[i % 4]):
// dropout's element -> number mapping (src/cpu/dropout.h), so a node owns blocks [offset, offset +
// ceil(n / 4)) of the step's stream like a dropout node. Each value is a multiple of 2^-24, exact in fp32.
void philox_uniform(float* values, int64_t n, uint64_t seed, uint64_t offset);

}  // namespace sb::cpu
