// Drop-path on the GPU: the same arguments as src/cpu/drop_path.h plus a stream; T = float, bf16 or fp16.
// Each thread draws its sample's Philox word (the CPU's mapping), so both devices drop the same samples. The
// offset is a StepValue (src/cuda/step_value.h): cuda::eager_value(offset) is the CPU's `offset`.
// Tests: tests/gpu/test_cuda_losses.cpp (suite CudaDropPath).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"
#include "src/cuda/step_value.h"

namespace sb::cuda {

template <typename T>
void drop_path_forward(const T* x, T* y, int64_t batch, int64_t per_sample, float p, uint64_t seed, StepValue offset,
                       cudaStream_t stream);

}  // namespace sb::cuda
