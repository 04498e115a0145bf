// α-β all-reduce costs of scalebench plan against hand-computed values (include/scalebench/plan_model.h).
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {
namespace {

LatencyModel nccl_like() {
  LatencyModel l;
  l.ring_base_us = 8.4;
  l.ring_hop_nvlink_us = 3.4;
  l.ring_hop_pci_us = 5.7;
  l.ring_hop_net_us = 9.6;
  l.tree_hop_us = 28;
  l.tree_bandwidth_factor = 0.92;
  return l;
}

TEST(PlanAllReduce, TwoGpusOneNodeRingIsBasePlusTwoHopsPlusBytesOverBus) {
  CommPath path;
  path.gpus = 2;
  path.busbw_gbps = 100;  // 1e5 bytes per µs
  const AllReduceCost cost = all_reduce_cost(path, 1e8, nccl_like());
  // 8.4 + 2·3.4 + 1e8 · 2(2−1)/2 / 1e5 = 1015.2 µs
  EXPECT_NEAR(cost.ring_us, 1015.2, 1e-9);
  // 2 · (1 + 0) · 28 + 2·1e8 / (0.92 · 1e5)
  EXPECT_NEAR(cost.tree_us, 56 + 2e8 / 0.92e5, 1e-9);
  EXPECT_STREQ(cost.algorithm(), "ring");
  EXPECT_DOUBLE_EQ(cost.us(), cost.ring_us);
}

// A reduce-scatter or all-gather is half the ring: N-1 steps, S (N-1)/N over the bus bandwidth, no tree.
TEST(PlanAllReduce, ScatterAndGatherAreHalfTheRing) {
  CommPath path;
  path.gpus = 2;
  path.busbw_gbps = 100;
  const AllReduceCost cost = ring_scatter_gather_cost(path, 1e8, nccl_like());
  EXPECT_NEAR(cost.ring_us, 8.4 + 3.4 + 1e8 * 0.5 / 1e5, 1e-9);  // 511.8 µs against the all-reduce's 1015.2
  EXPECT_STREQ(cost.algorithm(), "ring");
  path.gpus = 1;
  EXPECT_DOUBLE_EQ(ring_scatter_gather_cost(path, 1e8, nccl_like()).us(), 0);
}

TEST(PlanAllReduce, NetworkStepsUseTheNetworkLatency) {
  CommPath path;
  path.gpus = 16;
  path.nodes = 2;
  path.busbw_gbps = 50;
  const double bytes = 25.0 * (1 << 20);
  // 2·15 = 30 steps, 2·(2−1) = 2 of them across the network.
  const double ring = 8.4 + 28 * 3.4 + 2 * 9.6 + bytes * 30 / 16 / 5e4;
  const double tree = 2.0 * (7 + 1) * 28 + 2 * bytes / (0.92 * 5e4);
  const AllReduceCost cost = all_reduce_cost(path, bytes, nccl_like());
  EXPECT_NEAR(cost.ring_us, ring, 1e-6);
  EXPECT_NEAR(cost.tree_us, tree, 1e-6);
}

TEST(PlanAllReduce, ManyNodesPreferTheTreeForSmallMessagesAndTheRingForHugeOnes) {
  CommPath path;
  path.gpus = 1024;
  path.nodes = 128;
  path.busbw_gbps = 50;
  path.intra_hop = "nvlink";
  EXPECT_STREQ(all_reduce_cost(path, 1 << 20, nccl_like()).algorithm(), "tree");
  EXPECT_STREQ(all_reduce_cost(path, 64e9, nccl_like()).algorithm(), "ring");
}

TEST(PlanAllReduce, OneGpuCostsNothingAndABadPathIsRefused) {
  CommPath one;
  EXPECT_EQ(all_reduce_cost(one, 1e9, nccl_like()).us(), 0);
  CommPath broken;
  broken.gpus = 2;
  EXPECT_THROW(all_reduce_cost(broken, 1e6, nccl_like()), UsageError);
  broken.busbw_gbps = 1;
  broken.intra_hop = "carrier-pigeon";
  EXPECT_THROW(all_reduce_cost(broken, 1e6, nccl_like()), UsageError);
}

}  // namespace
}  // namespace sb
