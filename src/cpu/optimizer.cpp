// AdamW reference (src/cpu/optimizer.h), in double per element then rounded once.
#include "src/cpu/optimizer.h"

#include <cmath>

namespace sb::cpu {

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWSettings& s,
                int64_t step) {
  const double correction1 = 1.0 - std::pow(static_cast<double>(s.beta1), static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(static_cast<double>(s.beta2), static_cast<double>(step));
  for (int64_t i = 0; i < n; ++i) {
    const double g = grads[i];
    const double m_new = s.beta1 * static_cast<double>(m[i]) + (1.0 - s.beta1) * g;
    const double v_new = s.beta2 * static_cast<double>(v[i]) + (1.0 - s.beta2) * g * g;
    m[i] = static_cast<float>(m_new);
    v[i] = static_cast<float>(v_new);
    const double update = (m_new / correction1) / (std::sqrt(v_new / correction2) + s.epsilon);
    params[i] = static_cast<float>(params[i] - s.learning_rate * (update + s.weight_decay * params[i]));
  }
}

}  // namespace sb::cpu
