// `--precision` names (include/scalebench/precision.h) and the dynamic loss-scale rule
// (include/scalebench/loss_scale.h) that the CUDA optimizer step runs on the device: GradScaler's growth,
// backoff and skip semantics, checked on the host where a failure is easy to read.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "scalebench/error.h"
#include "scalebench/loss_scale.h"
#include "scalebench/precision.h"

namespace sb {
namespace {

TEST(Precision, EveryNameParsesAndRoundTrips) {
  for (const char* name : {"fp32", "tf32", "bf16", "fp16"}) {
    EXPECT_STREQ(precision_name(parse_precision(name)), name);
  }
  EXPECT_EQ(parse_precision("fp16"), Precision::kFp16);
}

TEST(Precision, Fp16IsMixedPrecisionWithLossScalingOnCudaOnly) {
  EXPECT_EQ(activation_dtype(Precision::kFp16), DType::kFloat16);
  EXPECT_EQ(activation_dtype(Precision::kBf16), DType::kBFloat16);
  EXPECT_EQ(activation_dtype(Precision::kTf32), DType::kFloat32);
  EXPECT_EQ(activation_dtype(Precision::kFp32), DType::kFloat32);
  EXPECT_TRUE(precision_needs_cuda(Precision::kFp16));
  EXPECT_FALSE(precision_needs_cuda(Precision::kFp32));
  EXPECT_STREQ(precision_description(Precision::kFp16),
               "fp16 mixed precision with dynamic loss scaling (fp32 master weights)");
}

TEST(Precision, UnknownNamesAreUsageErrorsNamingTheChoices) {
  for (const char* bad : {"fp8", "half", "", "FP16"}) {
    try {
      parse_precision(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("fp32, tf32, bf16 or fp16"), std::string::npos) << error.what();
    }
  }
}

TEST(LossScale, StartsAtGradScalersDefaults) {
  const LossScaleConfig config;
  EXPECT_EQ(config.mode, LossScaling::kAuto);
  EXPECT_EQ(config.initial_scale, 65536.0f);
  EXPECT_EQ(config.growth_factor, 2.0f);
  EXPECT_EQ(config.backoff_factor, 0.5f);
  EXPECT_EQ(config.growth_interval, 2000);
  const LossScaleState state = initial_loss_scale_state(config);
  EXPECT_EQ(state.scale, 65536.0f);
  EXPECT_EQ(state.growth_tracker, 0);
  EXPECT_EQ(state.skipped_steps, 0);
}

TEST(LossScale, OverflowHalvesTheScaleResetsTheStreakAndCountsASkip) {
  LossScaleConfig config;
  config.growth_interval = 5;
  LossScaleState state = initial_loss_scale_state(config);
  state = next_loss_scale(state, true, config);
  state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.growth_tracker, 2);
  state = next_loss_scale(state, false, config);
  EXPECT_EQ(state.scale, 32768.0f);
  EXPECT_EQ(state.growth_tracker, 0);
  EXPECT_EQ(state.skipped_steps, 1);
  state = next_loss_scale(state, false, config);
  EXPECT_EQ(state.scale, 16384.0f);
  EXPECT_EQ(state.skipped_steps, 2);
}

// The scale doubles on exactly the growth_interval-th consecutive finite step, then the count restarts.
TEST(LossScale, GrowsAfterGrowthIntervalConsecutiveFiniteSteps) {
  LossScaleConfig config;
  config.growth_interval = 3;
  config.initial_scale = 1024.0f;
  LossScaleState state = initial_loss_scale_state(config);
  const float expected[] = {1024, 1024, 2048, 2048, 2048, 4096};
  for (float scale : expected) {
    state = next_loss_scale(state, true, config);
    EXPECT_EQ(state.scale, scale);
  }
  EXPECT_EQ(state.growth_tracker, 0);
  EXPECT_EQ(state.skipped_steps, 0);
  // An overflow in the middle of a streak restarts it: two finite steps are not enough afterwards.
  state = next_loss_scale(state, true, config);
  state = next_loss_scale(state, false, config);
  state = next_loss_scale(state, true, config);
  state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.scale, 2048.0f);
  state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.scale, 4096.0f);
}

TEST(LossScale, DefaultIntervalIs2000Steps) {
  const LossScaleConfig config;
  LossScaleState state = initial_loss_scale_state(config);
  for (int i = 0; i < 1999; ++i) state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.scale, 65536.0f);
  EXPECT_EQ(state.growth_tracker, 1999);
  state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.scale, 131072.0f);
}

// GradScaler only grows to a finite scale; it stays where it was (and the streak restarts).
TEST(LossScale, NeverGrowsToInfinity) {
  LossScaleConfig config;
  config.growth_interval = 1;
  LossScaleState state;
  state.scale = std::ldexp(1.0f, 127);
  state = next_loss_scale(state, true, config);
  EXPECT_EQ(state.scale, std::ldexp(1.0f, 127));
  EXPECT_EQ(state.growth_tracker, 0);
}

TEST(LossScale, FiniteTestOnTheSquaredNorm) {
  EXPECT_TRUE(gradients_finite(0.0));
  EXPECT_TRUE(gradients_finite(1e300));
  EXPECT_FALSE(gradients_finite(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(gradients_finite(std::numeric_limits<double>::quiet_NaN()));
}

TEST(LossScale, BiasCorrectionCountsAppliedStepsOnly) {
  LossScaleState state;
  EXPECT_EQ(applied_optimizer_step(1, state), 1);
  state.skipped_steps = 3;
  EXPECT_EQ(applied_optimizer_step(10, state), 7);
}

}  // namespace
}  // namespace sb
