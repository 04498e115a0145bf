// Gradient blocks (PlanOptions::gradient_blocks, --strategy zero2/zero3) on one rank of the CPU device, with no
// reducer: the executor zeroes each block before its first writer and copies each finished bucket into its gradient
// shard, from which the optimizer reads. The weights after three steps are those of the same layout with the
// gradient region whole, bit for bit, unclipped and clipped (the norm over the shard sums the same values in the same
// order, the gaps zero); and a shard set to a part of the parameters updates that part alone, reading its gradients
// from a shard of that size.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/unit/sharded_replica.h"

namespace sb {
namespace {

std::unique_ptr<Replica> zero2_replica(const char* workload, bool gradient_blocks) {
  return test::sharded_replica(workload, DataParallelStrategy::kZero2,
                               gradient_blocks ? GradientLayout::kBlocks : GradientLayout::kWhole);
}

using test::trained_alone;

class GradientBlocks : public ::testing::TestWithParam<const char*> {};

TEST_P(GradientBlocks, OneRankTrainsAsWithTheGradientRegionWhole) {
  for (double clip : {0.0, 1.0}) {
    const std::unique_ptr<Replica> whole = zero2_replica(GetParam(), false);
    const std::unique_ptr<Replica> blocks = zero2_replica(GetParam(), true);
    ASSERT_TRUE(blocks->plan.gradients_in_blocks);
    ASSERT_FALSE(whole->plan.gradients_in_blocks);
    EXPECT_EQ(blocks->executor->gradient_shard_bytes(), blocks->plan.parameter_bytes) << "every gradient, one rank";
    const std::vector<float> expected = trained_alone(*whole, clip), got = trained_alone(*blocks, clip);
    ASSERT_EQ(expected.size(), got.size());
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += expected[i] != got[i];
    EXPECT_EQ(differ, 0) << "of " << got.size() << " weights, clip " << clip;
  }
}

// maxbatch's verification: one rank's chunks alone, their gradients copied into a shard of their size.
TEST_P(GradientBlocks, AShardOfThePlanUpdatesItsChunksAlone) {
  const std::unique_ptr<Replica> blocks = zero2_replica(GetParam(), true);
  const std::vector<float> before = read_parameters(*blocks);
  const ParameterShard shard = parameter_shard(blocks->plan, 1, 2);
  blocks->executor->set_optimizer_shard(shard.ranges);
  EXPECT_EQ(blocks->executor->gradient_shard_bytes() * 2, blocks->plan.gradient_bytes);
  trained_alone(*blocks, 0.0);
  // The flat layout's elements (parameters and their gaps) as they are in the arena, before and after.
  const auto* flat = static_cast<const float*>(blocks->executor->arena_data());
  std::vector<bool> mine(blocks->plan.parameter_bytes / sizeof(float), false);
  for (const ShardRange& r : shard.ranges) {
    for (int64_t i = r.first; i < r.first + r.count && i < static_cast<int64_t>(mine.size()); ++i) mine[i] = true;
  }
  int64_t own_changed = 0, rest_changed = 0;
  std::vector<float> initial(mine.size(), 0.0f);
  {
    const std::unique_ptr<Replica> fresh = zero2_replica(GetParam(), true);
    const auto* start = static_cast<const float*>(fresh->executor->arena_data());
    initial.assign(start, start + mine.size());
  }
  for (size_t i = 0; i < mine.size(); ++i) (mine[i] ? own_changed : rest_changed) += flat[i] != initial[i];
  EXPECT_GT(own_changed, 0);
  EXPECT_EQ(rest_changed, 0) << "the other chunks are not this shard's to update";
  EXPECT_NE(before, read_parameters(*blocks)) << "the weights, as read through their tensors, moved";
}

INSTANTIATE_TEST_SUITE_P(Workloads, GradientBlocks, ::testing::Values("bert_base", "transformer_big", "yolov3"));

}  // namespace
}  // namespace sb
