// Optimizer names, defaults and validation (include/scalebench/optimizer.h). Each workload's reference settings
// live in its own file (workloads/*.cpp, Workload::reference_optimizer).
#include "scalebench/optimizer.h"

#include <cstdio>

#include "scalebench/error.h"

namespace sb {
namespace {

constexpr OptimizerKind kKinds[] = {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kAdamax,
                                    OptimizerKind::kSgdMomentum, OptimizerKind::kNag};

bool is_adam_family(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW || kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamax;
}

}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamax: return "adamax";
    case OptimizerKind::kSgdMomentum: return "sgd_momentum";
    case OptimizerKind::kNag: return "nag";
  }
  return "?";
}

OptimizerKind parse_optimizer_kind(const std::string& name) {
  std::string names;
  for (OptimizerKind kind : kKinds) {
    if (name == optimizer_name(kind)) return kind;
    names += (names.empty() ? "" : ", ") + std::string(optimizer_name(kind));
  }
  throw UsageError("unknown optimizer '" + name + "' (available: " + names + ")");
}

int optimizer_state_buffers(OptimizerKind kind) { return is_adam_family(kind) ? 2 : 1; }

OptimizerSettings default_optimizer(OptimizerKind kind) {
  OptimizerSettings s;
  s.kind = kind;
  s.weight_decay = kind == OptimizerKind::kAdamW ? 0.01f : 0.0f;
  return s;
}

void validate_optimizer(const OptimizerSettings& s) {
  if (!(s.learning_rate > 0)) throw UsageError("the learning rate must be positive");
  if (is_adam_family(s.kind)) {
    if (!(s.beta1 >= 0 && s.beta1 < 1) || !(s.beta2 >= 0 && s.beta2 < 1)) {
      throw UsageError(std::string(optimizer_name(s.kind)) + ": betas must lie in [0, 1)");
    }
    if (!(s.epsilon > 0)) throw UsageError(std::string(optimizer_name(s.kind)) + ": epsilon must be positive");
  } else if (!(s.momentum >= 0 && s.momentum < 1)) {
    throw UsageError(std::string(optimizer_name(s.kind)) + ": momentum must lie in [0, 1)");
  }
  if (s.kind == OptimizerKind::kNag && !(s.momentum > 0)) throw UsageError("nag needs a positive momentum");
  if (!(s.weight_decay >= 0)) throw UsageError("the weight decay must not be negative");
  if (!(s.max_grad_norm >= 0)) throw UsageError("the clipping norm must not be negative (0: no clipping)");
}

std::string describe_optimizer(const OptimizerSettings& s) {
  char text[160];
  if (is_adam_family(s.kind)) {
    std::snprintf(text, sizeof text, "%s lr %g betas (%g, %g) eps %g weight decay %g", optimizer_name(s.kind),
                  s.learning_rate, s.beta1, s.beta2, s.epsilon, s.weight_decay);
  } else {
    std::snprintf(text, sizeof text, "%s lr %g momentum %g weight decay %g", optimizer_name(s.kind), s.learning_rate,
                  s.momentum, s.weight_decay);
  }
  std::string line = text;
  if (s.max_grad_norm > 0) {
    std::snprintf(text, sizeof text, ", grad-norm clip %g", s.max_grad_norm);
    line += text;
  }
  return line;
}

}  // namespace sb
