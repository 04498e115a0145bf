// The optimizers and global-norm gradient clipping on the GPU: the arguments of src/cpu/optimizer.h plus a
// stream; every pointer is device memory (`scratch` and `grad_norm_squared` included).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cpu/optimizer.h"

namespace sb::cuda {

// scratch[0] = sum of grads[i]^2 in double, deterministic: cpu::kGradNormBlocks blocks whatever the GPU, each a
// fixed-order partial into scratch[1 + block], then one block sums the partials in a fixed tree.
void grad_norm_squared(const float* grads, int64_t n, double* scratch, cudaStream_t stream);

// One fused pass per step: reads p, g and the state, writes p and the state (AdamW 7 floats per parameter,
// SGD 5); the clipping factor is computed in the kernel from *grad_norm_squared, so the host never waits.
void optimizer_step(float* params, const float* grads, float* state, int64_t n, const OptimizerSettings& settings,
                    int64_t step, const double* grad_norm_squared, cudaStream_t stream);

}  // namespace sb::cuda
