// Uniform floats of the engine's Philox stream on the GPU: the same name, arguments and element mapping as
// src/cpu/random_uniform.h plus a stream, bit for bit the CPU's values. Device pointer; fp32. The offset is a
// StepValue (src/cuda/step_value.h): cuda::eager_value(offset) is the CPU's `offset`.
// Tests: gpu_tests --gtest_filter='CudaSan.PhiloxUniform*'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/step_value.h"

namespace sb::cuda {

void philox_uniform(float* values, int64_t n, uint64_t seed, StepValue offset, cudaStream_t stream);

}  // namespace sb::cuda
