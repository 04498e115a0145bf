// LayerNorm over the last axis, CPU reference (sb::cuda::layernorm_* takes the same arguments plus a stream).
// y = (x - mean) * rstd * gamma + beta per row, with the biased variance as torch.nn.LayerNorm and BERT's
// TF LayerNorm use. Epsilon is the caller's: BERT (google-research/bert modeling.py) uses 1e-12, fairseq's
// Transformer (torch default) 1e-5. Statistics and reductions accumulate in fp64; storage is fp32.
#pragma once

#include <cstdint>

namespace sb::cpu {

// The two epsilons of the reference models, named so workloads do not repeat the literals.
constexpr float kBertLayerNormEpsilon = 1e-12f;
constexpr float kFairseqLayerNormEpsilon = 1e-5f;

// x, y: (rows, cols); gamma, beta: (cols); mean, rstd: (rows), saved for the backward pass
// (rstd = 1 / sqrt(var + epsilon)). y may not alias x.
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float epsilon);

// dy, x, dx: (rows, cols); gamma, dgamma, dbeta: (cols); mean, rstd: (rows) from the forward pass.
// dx, dgamma and dbeta are overwritten (not accumulated).
void layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                        float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t cols);

}  // namespace sb::cpu
