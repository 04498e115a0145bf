// AdamW over a flat parameter buffer on the GPU: the arguments of sb::cpu::adamw_step plus a stream.
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/optimizer.h"

namespace sb::cuda {

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWSettings& settings,
                int64_t step, cudaStream_t stream);

}  // namespace sb::cuda
