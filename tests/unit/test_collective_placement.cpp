// NCCL's pointer rules for in-place collectives, and which outputs can be poisoned before a check.
#include <gtest/gtest.h>

#include "collectives/collective_placement.h"

namespace sb {
namespace {

PlacementRequest request(CollectiveOp op, int rank, int nranks, uint64_t count) {
  return PlacementRequest{op, DType::kFloat32, ReduceOp::kSum, rank, nranks, 0, count, 8};
}

TEST(CollectivePlacement, InPlaceReduceScatterWritesTheRanksBlockOfTheInput) {
  char a[4096], b[4096];
  Placement p = place_collective(request(CollectiveOp::kReduceScatter, 2, 4, 400), true, a, b);
  EXPECT_EQ(p.block, 100u);
  EXPECT_EQ(p.send, a);
  EXPECT_EQ(p.recv, a + 2 * 100 * 4);
  EXPECT_EQ(p.output_count, 100u);
  EXPECT_FALSE(p.poison_before_input || p.poison_after_input);
}

TEST(CollectivePlacement, InPlaceAllGatherSendsFromTheRanksSlotAndPoisonsFirst) {
  char a[4096], b[4096];
  Placement p = place_collective(request(CollectiveOp::kAllGather, 3, 4, 400), true, a, b);
  EXPECT_EQ(p.recv, b);
  EXPECT_EQ(p.send, b + 3 * 100 * 4);
  EXPECT_EQ(p.input, b + 3 * 100 * 4);
  EXPECT_EQ(p.input_count, 100u);
  EXPECT_EQ(p.output_count, 400u);
  EXPECT_TRUE(p.poison_before_input);
  EXPECT_FALSE(p.poison_after_input);
}

TEST(CollectivePlacement, OutOfPlaceUsesTwoBuffersAndPoisonsTheOutput) {
  char a[4096], b[4096];
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
                          CollectiveOp::kBroadcast, CollectiveOp::kAllToAll}) {
    Placement p = place_collective(request(op, 1, 2, 64), false, a, b);
    EXPECT_NE(static_cast<const void*>(p.send), static_cast<const void*>(p.recv));
    EXPECT_EQ(p.output, p.recv);
    EXPECT_TRUE(p.poison_after_input);
    EXPECT_EQ(p.expected_spec.role, PatternRole::kExpected);
    EXPECT_EQ(p.input_spec.role, PatternRole::kInput);
  }
}

TEST(CollectivePlacement, InPlaceAllReduceAndAlltoallShareOneBuffer) {
  char a[4096], b[4096];
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kBroadcast, CollectiveOp::kAllToAll}) {
    Placement p = place_collective(request(op, 0, 2, 64), true, a, b);
    EXPECT_EQ(static_cast<const void*>(p.send), static_cast<const void*>(p.recv));
    EXPECT_EQ(p.recv, a);
  }
}

}  // namespace
}  // namespace sb
