// Optimizer settings shared by the executors and the trainer: the five update rules the reference trainings
// use (WORKLOADS.md, each workload's "Optimizer" line), as PyTorch's torch.optim defines them, plus global
// gradient-norm clipping as torch.nn.utils.clip_grad_norm_ does it. The kernels live in src/cpu/optimizer.h
// and src/cuda/optimizer.h; this file holds the settings and names; each workload declares its reference settings
// (Workload::reference_optimizer, include/scalebench/workload.h).
#pragma once

#include <string>

namespace sb {

enum class OptimizerKind {
  kAdamW,        // torch.optim.AdamW: decoupled weight decay
  kAdam,         // torch.optim.Adam: weight decay added to the gradient (L2)
  kAdamax,       // torch.optim.Adamax: infinity-norm second moment
  kSgdMomentum,  // torch.optim.SGD(momentum=m, dampening=0)
  kNag,          // torch.optim.SGD(momentum=m, dampening=0, nesterov=True)
};

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::kAdamW;
  float learning_rate = 1e-4f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  // the Adam family
  float weight_decay = 0.01f;
  float momentum = 0.9f;     // SGD momentum and NAG
  float max_grad_norm = 0;   // global L2 norm of all gradients; 0: no clipping
};

const char* optimizer_name(OptimizerKind kind);               // "adamw", "adam", "adamax", "sgd_momentum", "nag"
OptimizerKind parse_optimizer_kind(const std::string& name);  // UsageError naming the choices
// fp32 state buffers of the parameters' size: 2 for the Adam family (first moment, second moment or the
// infinity norm), 1 for SGD momentum and NAG (the momentum buffer).
int optimizer_state_buffers(OptimizerKind kind);

// PyTorch's defaults for `kind`, except the learning rate (1e-4, `scalebench run`'s default) and AdamW's weight
// decay (0.01, as torch.optim.AdamW); momentum 0.9 for SGD momentum and NAG (torch has none).
OptimizerSettings default_optimizer(OptimizerKind kind);
// UsageError for settings PyTorch refuses (lr <= 0, betas outside [0, 1), eps <= 0, weight decay < 0, NAG
// without momentum, a negative clipping norm).
void validate_optimizer(const OptimizerSettings& settings);
// One line for run headers: "nag lr 0.5 momentum 0.99 weight decay 0, grad-norm clip 0.1".
std::string describe_optimizer(const OptimizerSettings& settings);

}  // namespace sb
