// An executor's optimizer shard (Executor::set_optimizer_shard, --strategy zero1): the range must lie inside the
// parameters; updates outside it are refused; only the shard's parameters move, every gradient still counts in the
// clipping norm; and --strategy's names round-trip.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/error.h"
#include "scalebench/strategy.h"
#include "src/train/replica.h"

namespace sb {
namespace {

std::unique_ptr<Replica> tiny_bert(Device& device) {
  ReplicaOptions options;
  options.workload = "bert_base";
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  return build_replica(options, device, 1, 0, 7);
}

TEST(OptimizerShard, RangesOutsideTheParametersOrTheShardAreRefused) {
  auto device = make_cpu_device();
  auto replica = tiny_bert(*device);
  Executor& executor = *replica->executor;
  const auto n = static_cast<int64_t>(replica->plan.parameter_bytes / sizeof(float));
  EXPECT_EQ(executor.optimizer_shard_first(), 0);
  EXPECT_EQ(executor.optimizer_shard_count(), n) << "every parameter by default";
  EXPECT_THROW(executor.set_optimizer_shard(-1, 4), UsageError);
  EXPECT_THROW(executor.set_optimizer_shard(n - 4, 8), UsageError);
  executor.set_optimizer_shard(256, 512);
  const OptimizerSettings adamw = default_optimizer(OptimizerKind::kAdamW);
  EXPECT_THROW(executor.optimizer_step_range(adamw, 1, 0, 256), UsageError) << "before the shard";
  EXPECT_THROW(executor.optimizer_step_range(adamw, 1, 700, 100), UsageError) << "past its end";
  EXPECT_NO_THROW(executor.optimizer_step_range(adamw, 1, 256, 512));
}

// A clipped step on the shard moves exactly the shard's parameters, by what a whole-region step moves them: the
// clipping norm is the whole gradient's in both.
TEST(OptimizerShard, AShardedStepMovesTheShardAsTheWholeStepDoes) {
  auto device = make_cpu_device();
  auto whole = tiny_bert(*device), sharded = tiny_bert(*device);
  OptimizerSettings clipped = default_optimizer(OptimizerKind::kAdamW);
  clipped.max_grad_norm = 1e-3;
  for (Replica* replica : {whole.get(), sharded.get()}) {
    replica->executor->set_random_stream(3, 1);
    replica->executor->run();
  }
  // The clipping engages, and the norm outside the shard is most of it: a norm over the shard alone would scale
  // the shard's gradients otherwise.
  const auto n = static_cast<int64_t>(whole->plan.parameter_bytes / sizeof(float));
  const int64_t first = 1024, count = 2048;
  const auto* grads = reinterpret_cast<const float*>(static_cast<const unsigned char*>(whole->executor->arena_data()) +
                                                     whole->plan.gradient_region_offset);
  double all = 0, inside = 0;
  for (int64_t i = 0; i < n; ++i) {
    all += static_cast<double>(grads[i]) * grads[i];
    if (i >= first && i < first + count) inside += static_cast<double>(grads[i]) * grads[i];
  }
  ASSERT_GT(std::sqrt(all), clipped.max_grad_norm);
  ASSERT_GT(all, 2 * inside);
  sharded->executor->set_optimizer_shard(first, count);
  whole->executor->optimizer_step(clipped, 1);
  sharded->executor->optimizer_step(clipped, 1);
  // The flat region, element for element, against the same initial weights (the same seed) untouched.
  const std::unique_ptr<Replica> untouched = tiny_bert(*device);
  const auto* w = static_cast<const float*>(whole->executor->arena_data());
  const auto* s = static_cast<const float*>(sharded->executor->arena_data());
  const auto* b = static_cast<const float*>(untouched->executor->arena_data());
  int64_t moved_outside = 0, differ_inside = 0, moved_inside = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i >= first && i < first + count) {
      differ_inside += s[i] != w[i];
      moved_inside += s[i] != b[i];
    } else {
      moved_outside += s[i] != b[i];
    }
  }
  EXPECT_EQ(differ_inside, 0);
  EXPECT_EQ(moved_outside, 0);
  EXPECT_GT(moved_inside, count / 2) << "the shard's parameters did move";
}

TEST(Strategy, NamesRoundTrip) {
  for (DataParallelStrategy s : {DataParallelStrategy::kDdp, DataParallelStrategy::kZero1}) {
    EXPECT_EQ(parse_strategy(strategy_name(s)), s);
  }
  EXPECT_THROW(parse_strategy("zero4"), UsageError);
}

}  // namespace
}  // namespace sb
