// The weights' moving average on the CPU (src/cpu/ema.h).
#include "src/cpu/ema.h"

namespace sb::cpu {

void ema_update(const float* param, float* average, int64_t n, float beta, bool first_step) {
  for (int64_t i = 0; i < n; ++i) average[i] = first_step ? param[i] : param[i] + beta * (average[i] - param[i]);
}

}  // namespace sb::cpu
