// The mean losses over whole tensors of pix2pixHD, CPU reference (sb::cpu): LSGAN's squared error against a
// constant target (torch.nn.MSELoss against a filled tensor) and the L1 distance of feature matching and the
// VGG loss (torch.nn.L1Loss). Sums in double, one rounding. `seed` is the loss's gradient (1, or its weight in a
// sum of losses). The CUDA device has the same names (src/cuda/pixel_losses.h).
// Tests: tests/unit/test_cpu_pixel_losses.cpp (suite CpuPixelLosses).
#pragma once

#include <cstdint>

namespace sb::cpu {

// loss = mean (x − target)²; dx = seed · 2 (x − target) / n.
float mse_loss_forward(const float* x, int64_t n, float target);
void mse_loss_backward(const float* x, float* dx, int64_t n, float target, float seed);

// loss = mean |a − b|; da = seed · sign(a − b) / n (0 where a = b, torch.sign's), db = −da when db is not null.
float l1_loss_forward(const float* a, const float* b, int64_t n);
void l1_loss_backward(const float* a, const float* b, float* da, float* db, int64_t n, float seed);

}  // namespace sb::cpu
