// The exponential moving average of G's weights (NVlabs/stylegan training_loop.py: Gs.setup_as_moving_average_of
// (G, beta), beta = 0.5 ^ (minibatch / 10 kimg)): average = param + beta · (average - param) = lerp(param,
// average, beta), a non-trained copy (kState) updated in place, never reduced. The first step of a phase copies
// the weights (Gs starts as a clone of G). CPU reference. Tests: tests/unit/test_cpu_stylegan_g_ops.cpp.
#pragma once

#include <cstdint>

namespace sb::cpu {

void ema_update(const float* param, float* average, int64_t n, float beta, bool first_step);

}  // namespace sb::cpu
