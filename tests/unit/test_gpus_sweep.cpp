// --gpus-sweep's sizes and groups (include/scalebench/gpus_sweep.h). The grouping is checked on topo JSON
// documents of machines that are not lent here (tests/data/topo/*.json): each was written by hand from the
// public description its "note" names, not recorded on such a machine.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scalebench/error.h"
#include "scalebench/gpus_sweep.h"

namespace sb {
namespace {

TopoReport layout(const std::string& name) {
  std::ifstream in(std::string(SB_TEST_DATA_DIR) + "/topo/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return topo_report_from_json(text.str());
}

TopoReport cpu_ranks(int n) {
  TopoReport topo;
  topo.world_size = n;
  for (int r = 0; r < n; ++r) topo.ranks.push_back({r, 0, "ci", r, "cpu", ""});
  topo.nodes.push_back({});
  return topo;
}

TEST(GpusSweepParse, ListsAndAuto) {
  EXPECT_TRUE(parse_gpus_sweep("auto").automatic);
  EXPECT_EQ(parse_gpus_sweep("4,1,2").sizes, (std::vector<int>{4, 1, 2}));
  for (const char* bad : {"0", "1,0", "2,2", "x", "1,,2", "1,", "-1", "", "1.5"}) {
    EXPECT_THROW(parse_gpus_sweep(bad), UsageError) << bad;
  }
  try {
    parse_gpus_sweep("2,4,2");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--gpus-sweep: 2 is listed twice");
  }
}

TEST(GpusSweepSizes, AutoIsPowersOfTwoThenTheWholeJob) {
  SweepRequest automatic = parse_gpus_sweep("auto");
  EXPECT_EQ(resolve_sweep_sizes(automatic, 1, {1}), (std::vector<int>{1}));
  EXPECT_EQ(resolve_sweep_sizes(automatic, 4, {4}), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(resolve_sweep_sizes(automatic, 6, {6}), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(resolve_sweep_sizes(automatic, 8, {8}), (std::vector<int>{1, 2, 4, 8}));
  // Several nodes: within the first, that whole node, then whole nodes (2, 4, … of them) and the job.
  EXPECT_EQ(resolve_sweep_sizes(automatic, 24, {8, 8, 8}), (std::vector<int>{1, 2, 4, 8, 16, 24}));
  EXPECT_EQ(resolve_sweep_sizes(automatic, 12, {6, 6}), (std::vector<int>{1, 2, 4, 6, 12}));
  automatic.concurrent = true;  // only sizes that divide the job
  EXPECT_EQ(resolve_sweep_sizes(automatic, 6, {6}), (std::vector<int>{1, 2, 6}));
}

TEST(GpusSweepSizes, ListsAreSortedAndBounded) {
  EXPECT_EQ(resolve_sweep_sizes(parse_gpus_sweep("4,1,2"), 4, {4}), (std::vector<int>{1, 2, 4}));
  EXPECT_THROW(resolve_sweep_sizes(parse_gpus_sweep("1,8"), 4, {4}), UsageError);
  SweepRequest concurrent = parse_gpus_sweep("3");
  concurrent.concurrent = true;
  try {
    resolve_sweep_sizes(concurrent, 4, {4});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--gpus-sweep: 3 does not divide the job's 4 ranks into --concurrent-groups");
  }
}

TEST(GpusSweepGroups, NvswitchFillsInRankOrderAndStaysOnNvlink) {
  const TopoReport topo = layout("dgx_h100_8gpu_nvswitch.json");
  const std::vector<int> order = topology_order(topo);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (int k : {2, 4, 8}) EXPECT_EQ(sweep_groups(topo, order, k, false)[0].link, "NV18") << k;
  EXPECT_EQ(sweep_groups(topo, order, 1, false)[0].link, "");
  EXPECT_EQ(sweep_groups(topo, order, 2, false)[0].devices, (std::vector<std::string>{"dgx-h100 cuda:0", "dgx-h100 cuda:1"}));
}

TEST(GpusSweepGroups, TwoPcieSwitchesFillOneSwitchFirst) {
  const TopoReport topo = layout("pcie_8gpu_two_switches.json");
  const std::vector<int> order = topology_order(topo);
  // Even ordinals share switch A: rank order would put 0 and 1 (across the sockets) in the 2-GPU group.
  EXPECT_EQ(order, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(sweep_groups(topo, order, 2, false)[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(sweep_groups(topo, order, 2, false)[0].link, "PIX");
  EXPECT_EQ(sweep_groups(topo, order, 4, false)[0].link, "PIX");
  EXPECT_EQ(sweep_groups(topo, order, 8, false)[0].link, "SYS");
  const std::vector<SweepGroup> pairs = sweep_groups(topo, order, 2, true);
  ASSERT_EQ(pairs.size(), 4u);
  for (const SweepGroup& group : pairs) EXPECT_EQ(group.link, "PIX");
  const std::vector<SweepGroup> halves = sweep_groups(topo, order, 4, true);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(halves[1].ranks, (std::vector<int>{1, 3, 5, 7}));
}

TEST(GpusSweepGroups, TwoNodesFillRankZerosNodeBeforeTheNetwork) {
  const TopoReport topo = layout("two_nodes_4gpu_nvlink.json");
  const std::vector<int> order = topology_order(topo);
  EXPECT_EQ(order, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));  // ranks placed round-robin over the nodes
  EXPECT_EQ(resolve_sweep_sizes(parse_gpus_sweep("auto"), 8, {4, 4}), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(sweep_groups(topo, order, 4, false)[0].link, "NV6");
  EXPECT_EQ(sweep_groups(topo, order, 8, false)[0].link, "network");
  EXPECT_EQ(sweep_groups(topo, order, 4, true)[1].devices.front(), "hgx1 cuda:0");
}

TEST(GpusSweepGroups, CpuRanksAndSharedGpus) {
  const TopoReport cpu = cpu_ranks(4);
  EXPECT_EQ(topology_order(cpu), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(weakest_link(cpu, {0, 1}), "host");
  TopoReport shared = cpu;
  for (RankPlacement& placement : shared.ranks) placement.device = "cuda:0";
  EXPECT_EQ(weakest_link(shared, {0, 3}), "same GPU");
}

}  // namespace
}  // namespace sb
