// The CPU optimizers (src/cpu/optimizer.h) against the update rules written out again here in double, in the
// shape of PyTorch's single-tensor code (torch/optim/{adam,adamw,adamax,sgd}.py, torch/nn/utils/clip_grad.py),
// for a few steps on random non-zero data; state buffers checked too. Names, defaults, references, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"
#include "src/cpu/optimizer.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

// The CPU rounds parameters and state to fp32 once per step, the expectation keeps them in double: a few fp32
// ulps after three steps of O(1) values.
constexpr double kAtol = 1e-6, kRtol = 1e-6;
constexpr int64_t kN = 1031;  // not a multiple of 4 or 8
constexpr int kSteps = 3;

// One element's history, in double, as torch.optim steps it (grads already clipped).
struct Expected {
  double p, first = 0, second = 0;
};

void torch_step(Expected& e, double grad, const OptimizerSettings& s, int t) {
  const double lr = s.learning_rate, wd = s.weight_decay, b1 = s.beta1, b2 = s.beta2, eps = s.epsilon;
  double g = grad;
  switch (s.kind) {
    case OptimizerKind::kAdamW: {  // adamw.py: param.mul_(1 - lr * weight_decay), then Adam without L2
      e.p *= 1 - lr * wd;
      e.first = b1 * e.first + (1 - b1) * g;  // exp_avg.lerp_(grad, 1 - beta1)
      e.second = b2 * e.second + (1 - b2) * g * g;
      const double step_size = lr / (1 - std::pow(b1, t));
      const double denom = std::sqrt(e.second) / std::sqrt(1 - std::pow(b2, t)) + eps;
      e.p -= step_size * e.first / denom;
      break;
    }
    case OptimizerKind::kAdam: {  // adam.py: grad = grad.add(param, alpha=weight_decay)
      g += wd * e.p;
      e.first = b1 * e.first + (1 - b1) * g;
      e.second = b2 * e.second + (1 - b2) * g * g;
      const double step_size = lr / (1 - std::pow(b1, t));
      const double denom = std::sqrt(e.second) / std::sqrt(1 - std::pow(b2, t)) + eps;
      e.p -= step_size * e.first / denom;
      break;
    }
    case OptimizerKind::kAdamax: {  // adamax.py: exp_inf = amax(cat([exp_inf * beta2, |grad| + eps]))
      g += wd * e.p;
      e.first = b1 * e.first + (1 - b1) * g;
      e.second = std::max(e.second * b2, std::fabs(g) + eps);
      const double clr = lr / (1 - std::pow(b1, t));
      e.p -= clr * e.first / e.second;
      break;
    }
    case OptimizerKind::kSgdMomentum:
    case OptimizerKind::kNag: {  // sgd.py: buf = clone(grad) at the first step, then buf.mul_(m).add_(grad)
      g += wd * e.p;
      e.first = t == 1 ? g : s.momentum * e.first + g;
      e.p -= lr * (s.kind == OptimizerKind::kNag ? g + s.momentum * e.first : e.first);
      break;
    }
  }
}

// clip_grad.py: total_norm = ||g||_2; clip_coef = max_norm / (total_norm + 1e-6), clamped to at most 1.
double torch_clip_coefficient(const std::vector<float>& grads, double max_norm) {
  double sum = 0;
  for (float g : grads) sum += double(g) * g;
  return std::min(1.0, max_norm / (std::sqrt(sum) + 1e-6));
}

void expect_close(const float* got, const std::vector<double>& want, const char* what) {
  int64_t worst = 0;
  double worst_excess = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(want.size()); ++i) {
    const double excess = std::fabs(got[i] - want[i]) - (kAtol + kRtol * std::fabs(want[i]));
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  EXPECT_LE(worst_excess, 0) << what << "[" << worst << "]: got " << got[worst] << ", want " << want[worst];
}

double norm(const float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
  return std::sqrt(sum);
}

// kSteps of `s` on the CPU and in the double expectation, with fresh N(0, 0.5^2) gradients (norm ~16) each step;
// params and state compared, and both must have moved.
void check_against_torch(const OptimizerSettings& s) {
  SCOPED_TRACE(describe_optimizer(s));
  const int buffers = optimizer_state_buffers(s.kind);
  std::vector<float> params = test::random_normal(kN, 7);
  const int64_t stride = cpu::optimizer_state_stride(kN);
  ASSERT_EQ(stride, 1032);
  std::vector<float> state(static_cast<size_t>(buffers * stride), 0.0f);  // zeroed, as the executors do
  const std::vector<float> initial = params;
  std::vector<Expected> expected(kN);
  for (int64_t i = 0; i < kN; ++i) expected[i].p = params[i];
  std::vector<double> scratch(cpu::kGradNormScratchDoubles);
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> grads = test::random_normal(kN, 100 + t, 0.5f);
    ASSERT_GT(norm(grads.data(), kN), 0);
    cpu::grad_norm_squared(grads.data(), kN, scratch.data());
    cpu::optimizer_step(params.data(), grads.data(), state.data(), kN, s, t, scratch.data());
    const double clip = s.max_grad_norm > 0 ? torch_clip_coefficient(grads, s.max_grad_norm) : 1.0;
    for (int64_t i = 0; i < kN; ++i) torch_step(expected[i], clip * grads[i], s, t);
  }
  std::vector<double> want_p(kN), want_first(kN), want_second(kN);
  for (int64_t i = 0; i < kN; ++i) {
    want_p[i] = expected[i].p;
    want_first[i] = expected[i].first;
    want_second[i] = expected[i].second;
  }
  expect_close(params.data(), want_p, "params");
  expect_close(state.data(), want_first, "state[0]");
  if (buffers == 2) expect_close(state.data() + stride, want_second, "state[1]");
  std::vector<float> moved(kN);
  for (int64_t i = 0; i < kN; ++i) moved[i] = params[i] - initial[i];
  EXPECT_GT(norm(moved.data(), kN), 1e-3 * s.learning_rate * std::sqrt(double(kN))) << "the parameters barely moved";
  EXPECT_GT(norm(state.data(), kN), 0);
  if (buffers == 2) EXPECT_GT(norm(state.data() + stride, kN), 0);
}

OptimizerSettings settings_for(OptimizerKind kind) {
  OptimizerSettings s = default_optimizer(kind);
  s.learning_rate = 1e-2f;
  s.weight_decay = 0.05f;  // non-zero for every kind, so the decay term is checked
  s.beta2 = 0.98f;
  return s;
}

constexpr OptimizerKind kAllKinds[] = {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kAdamax,
                                       OptimizerKind::kSgdMomentum, OptimizerKind::kNag};

TEST(CpuOptimizers, EveryOptimizerFollowsPyTorchForThreeSteps) {
  for (OptimizerKind kind : kAllKinds) check_against_torch(settings_for(kind));
}

TEST(CpuOptimizers, MomentumAndBetasOtherThanTheDefaults) {
  OptimizerSettings nag = settings_for(OptimizerKind::kNag);
  nag.momentum = 0.99f;  // fairseq's NAG (WORKLOADS.md §8)
  check_against_torch(nag);
  OptimizerSettings adam = settings_for(OptimizerKind::kAdam);
  adam.beta1 = 0.0f;  // StyleGAN's Adam (§5): no first moment
  adam.beta2 = 0.99f;
  check_against_torch(adam);
}

TEST(CpuOptimizers, ClippingAboveTheMaximumScalesEveryGradient) {
  const std::vector<float> grads = test::random_normal(kN, 3, 0.5f);
  const double grad_norm = norm(grads.data(), kN);
  for (OptimizerKind kind : kAllKinds) {
    OptimizerSettings s = settings_for(kind);
    s.max_grad_norm = static_cast<float>(0.25 * grad_norm);  // clip ~ 0.25 for check_against_torch's gradients too
    check_against_torch(s);
  }
  EXPECT_NEAR(cpu::clip_scale(grad_norm * grad_norm, static_cast<float>(0.25 * grad_norm)), 0.25, 1e-6);
}

TEST(CpuOptimizers, ClippingBelowTheMaximumChangesNothing) {
  const std::vector<float> grads = test::random_normal(kN, 3, 0.5f);
  const double grad_norm = norm(grads.data(), kN);
  EXPECT_EQ(cpu::clip_scale(grad_norm * grad_norm, static_cast<float>(2 * grad_norm)), 1.0);
  EXPECT_EQ(cpu::clip_scale(grad_norm * grad_norm, 0.0f), 1.0);  // 0: no clipping
  for (OptimizerKind kind : kAllKinds) {
    OptimizerSettings clipped = settings_for(kind), plain = settings_for(kind);
    clipped.max_grad_norm = static_cast<float>(2 * grad_norm);
    std::vector<float> p1 = test::random_normal(kN, 9), p2 = p1;
    std::vector<float> s1(2 * cpu::optimizer_state_stride(kN), 0.0f), s2 = s1;
    std::vector<double> scratch(cpu::kGradNormScratchDoubles);
    cpu::grad_norm_squared(grads.data(), kN, scratch.data());
    cpu::optimizer_step(p1.data(), grads.data(), s1.data(), kN, clipped, 1, scratch.data());
    cpu::optimizer_step(p2.data(), grads.data(), s2.data(), kN, plain, 1, nullptr);
    EXPECT_EQ(p1, p2) << optimizer_name(kind);
    EXPECT_EQ(s1, s2) << optimizer_name(kind);
  }
}

TEST(CpuOptimizers, GradNormSquaredIsTheSumOfSquares) {
  const std::vector<float> grads = test::random_normal(kN, 4);
  double want = 0;
  for (float g : grads) want += double(g) * g;
  std::vector<double> scratch(cpu::kGradNormScratchDoubles);
  cpu::grad_norm_squared(grads.data(), kN, scratch.data());
  ASSERT_GT(want, 0);
  EXPECT_NEAR(scratch[0], want, 1e-12 * want);
}

TEST(CpuOptimizers, ClippingWithoutANormIsRefused) {
  OptimizerSettings s = settings_for(OptimizerKind::kAdamW);
  s.max_grad_norm = 1.0f;
  std::vector<float> p(4, 1.0f), g(4, 1.0f), state(8, 0.0f);
  EXPECT_THROW(cpu::optimizer_step(p.data(), g.data(), state.data(), 4, s, 1, nullptr), UsageError);
}

TEST(OptimizerSettings, NamesRoundTripAndUnknownNamesAreUsageErrors) {
  for (OptimizerKind kind : kAllKinds) EXPECT_EQ(parse_optimizer_kind(optimizer_name(kind)), kind);
  for (const char* bad : {"", "sgd", "AdamW", "lamb", "reference"}) {
    EXPECT_THROW(parse_optimizer_kind(bad), UsageError) << bad;
  }
  try {
    parse_optimizer_kind("lamb");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("adamw, adam, adamax, sgd_momentum, nag"), std::string::npos) << e.what();
  }
  EXPECT_EQ(optimizer_state_buffers(OptimizerKind::kAdamW), 2);
  EXPECT_EQ(optimizer_state_buffers(OptimizerKind::kAdamax), 2);
  EXPECT_EQ(optimizer_state_buffers(OptimizerKind::kNag), 1);
}

TEST(OptimizerSettings, TheDefaultIsTodaysAdamW) {
  const OptimizerSettings s;
  EXPECT_EQ(s.kind, OptimizerKind::kAdamW);
  EXPECT_FLOAT_EQ(s.learning_rate, 1e-4f);
  EXPECT_FLOAT_EQ(s.weight_decay, 0.01f);
  EXPECT_EQ(s.max_grad_norm, 0.0f);
  EXPECT_EQ(default_optimizer(OptimizerKind::kAdam).weight_decay, 0.0f);  // torch.optim.Adam's default
}

TEST(OptimizerSettings, InvalidSettingsAreUsageErrors) {
  auto refused = [](auto change) {
    OptimizerSettings s = default_optimizer(OptimizerKind::kNag);
    change(s);
    EXPECT_THROW(validate_optimizer(s), UsageError);
  };
  refused([](OptimizerSettings& s) { s.momentum = 0; });  // NAG needs momentum (as torch.optim.SGD)
  refused([](OptimizerSettings& s) { s.learning_rate = 0; });
  refused([](OptimizerSettings& s) { s.max_grad_norm = -1; });
  refused([](OptimizerSettings& s) { s.weight_decay = -0.1f; });
  refused([](OptimizerSettings& s) { s.kind = OptimizerKind::kAdam, s.beta2 = 1.0f; });
  refused([](OptimizerSettings& s) { s.kind = OptimizerKind::kAdamax, s.epsilon = 0; });
  for (OptimizerKind kind : kAllKinds) EXPECT_NO_THROW(validate_optimizer(default_optimizer(kind)));
}

TEST(OptimizerSettings, ReferenceOptimizersAreWorkloadsMdOnes) {
  for (const Workload* workload : workload_registry()) {
    EXPECT_NO_THROW(validate_optimizer(workload->reference_optimizer())) << workload->info().name;
  }
  // §7 Adam (0.9, 0.98)
  const OptimizerSettings transformer = find_workload("transformer_big").reference_optimizer();
  EXPECT_EQ(transformer.kind, OptimizerKind::kAdam);
  EXPECT_FLOAT_EQ(transformer.beta2, 0.98f);
  EXPECT_FLOAT_EQ(transformer.epsilon, 1e-8f);
  EXPECT_EQ(transformer.max_grad_norm, 0.0f);
  const OptimizerSettings bert = find_workload("bert_base").reference_optimizer();  // §10 AdamWeightDecay
  EXPECT_EQ(bert.kind, OptimizerKind::kAdamW);
  EXPECT_FLOAT_EQ(bert.epsilon, 1e-6f);
  EXPECT_FLOAT_EQ(bert.weight_decay, 0.01f);
  EXPECT_FLOAT_EQ(find_workload("bert_finetune").reference_optimizer().learning_rate, 3e-5f);  // §11
  const OptimizerSettings mt_dnn = find_workload("mt_dnn").reference_optimizer();  // §12 Adamax, global clip 1.0
  EXPECT_EQ(mt_dnn.kind, OptimizerKind::kAdamax);
  EXPECT_FLOAT_EQ(mt_dnn.learning_rate, 5e-5f);
  EXPECT_FLOAT_EQ(mt_dnn.max_grad_norm, 1.0f);
  EXPECT_THROW(find_workload("resnet50"), UsageError);  // no workload, no reference optimizer
}

TEST(OptimizerSettings, DescriptionNamesTheOptimizerAndClipping) {
  OptimizerSettings s = default_optimizer(OptimizerKind::kNag);
  s.learning_rate = 0.5f;
  s.momentum = 0.99f;
  s.max_grad_norm = 0.1f;
  EXPECT_EQ(describe_optimizer(s), "nag lr 0.5 momentum 0.99 weight decay 0, grad-norm clip 0.1");
  EXPECT_EQ(describe_optimizer(OptimizerSettings{}), "adamw lr 0.0001 betas (0.9, 0.999) eps 1e-08 weight decay 0.01");
}

}  // namespace
}  // namespace sb
