// StyleGAN's losses (NVlabs/stylegan training/loss.py: G_logistic_nonsaturating, D_logistic_simplegp) as
// one-element loss ops, CPU reference: the logistic terms softplus(±D(x)) averaged over the batch, and the R1
// penalty (gamma / 2) · ||grad||² averaged over the batch (the reference's tf.reduce_mean of the per-sample
// losses). Each backward pass starts from the unit gradient times `weight` (a weighted sum of losses).
// Tests: tests/unit/test_cpu_stylegan_ops.cpp (suite CpuGanLosses).
#pragma once

#include <cstdint>

namespace sb::cpu {

// loss = mean_n softplus(sign · scores[n]), sign ±1; softplus(z) = max(z, 0) + log1p(exp(-|z|)).
float softplus_loss_forward(const float* scores, int64_t n, float sign);
// dscores[n] = weight · sign · sigmoid(sign · scores[n]) / n.
void softplus_loss_backward(const float* scores, float* dscores, int64_t n, float sign, float weight);

// loss = scale / batch · sum over all elements of x², x (batch, ...) with `elements` in all.
float squared_norm_loss_forward(const float* x, int64_t elements, int64_t batch, float scale);
// dx = weight · 2 · scale / batch · x.
void squared_norm_loss_backward(const float* x, float* dx, int64_t elements, int64_t batch, float scale, float weight);

}  // namespace sb::cpu
