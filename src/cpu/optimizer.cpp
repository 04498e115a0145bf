// Optimizer reference (src/cpu/optimizer.h): double per element, rounded to fp32 once per stored value.
#include "src/cpu/optimizer.h"

#include <algorithm>
#include <cmath>

#include "scalebench/error.h"

namespace sb::cpu {

void grad_norm_squared(const float* grads, int64_t n, double* scratch) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  scratch[0] = sum;
}

double clip_scale(double norm_squared, float max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, static_cast<double>(max_norm) / (std::sqrt(norm_squared) + 1e-6));
}

void optimizer_step(float* params, const float* grads, float* state, int64_t n, const OptimizerSettings& s,
                    int64_t step, const double* grad_norm_squared, int64_t state_stride) {
  if (s.max_grad_norm > 0 && grad_norm_squared == nullptr) {
    throw UsageError("optimizer_step: clipping needs the gradients' squared norm");
  }
  const double clip = s.max_grad_norm > 0 ? clip_scale(*grad_norm_squared, s.max_grad_norm) : 1.0;
  const double lr = s.learning_rate, wd = s.weight_decay, b1 = s.beta1, b2 = s.beta2, eps = s.epsilon;
  const double mu = s.momentum;
  const double correction1 = 1.0 - std::pow(b1, static_cast<double>(step));
  const double correction2_sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(step)));
  float* first = state;
  float* second = state + (state_stride == 0 ? optimizer_state_stride(n) : state_stride);
  for (int64_t i = 0; i < n; ++i) {
    double p = params[i];
    double g = clip * grads[i];
    switch (s.kind) {
      case OptimizerKind::kAdamW:
      case OptimizerKind::kAdam: {
        if (s.kind == OptimizerKind::kAdamW) {
          p *= 1.0 - lr * wd;
        } else {
          g += wd * p;
        }
        const double m = b1 * first[i] + (1.0 - b1) * g;
        const double v = b2 * second[i] + (1.0 - b2) * g * g;
        first[i] = static_cast<float>(m);
        second[i] = static_cast<float>(v);
        p -= lr / correction1 * m / (std::sqrt(v) / correction2_sqrt + eps);
        break;
      }
      case OptimizerKind::kAdamax: {
        g += wd * p;
        const double m = b1 * first[i] + (1.0 - b1) * g;
        const double u = std::max(b2 * second[i], std::fabs(g) + eps);
        first[i] = static_cast<float>(m);
        second[i] = static_cast<float>(u);
        p -= lr / correction1 * m / u;
        break;
      }
      case OptimizerKind::kSgdMomentum:
      case OptimizerKind::kNag: {
        g += wd * p;
        const double b = mu * first[i] + g;
        first[i] = static_cast<float>(b);
        p -= lr * (s.kind == OptimizerKind::kNag ? g + mu * b : b);
        break;
      }
    }
    params[i] = static_cast<float>(p);
  }
}

}  // namespace sb::cpu
