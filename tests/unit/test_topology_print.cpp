// Unit tests of the console report of `scalebench topo` (src/topo/topology_print.cpp) on hand-built
// topologies: the 2 x H200 node must show NV18 in an `nvidia-smi topo -m` style matrix, a node without
// NVML or GPUs must say so, and the NCCL transport line must say what was (or was not) probed.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "scalebench/topology.h"
#include "tests/unit/test_topology_fixture.h"

namespace sb {
namespace {

std::string printed(const TopoReport& report) {
  std::ostringstream out;
  print_topo_report(out, report);
  return out.str();
}

bool has_line(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

TEST(TopologyPrint, TwoH200MatrixShowsNV18) {
  const std::string text = printed(test::report_of({test::two_h200_node()}, 2));
  // Matrix: a header row naming the GPUs, X on the diagonal, NV18 off it, then affinity and NUMA.
  EXPECT_TRUE(has_line(text, R"(^#\s+GPU0\s+GPU1\s+CPU Affinity\s+NUMA$)")) << text;
  EXPECT_TRUE(has_line(text, R"(^\s+GPU0\s+X\s+NV18\s+0-47,96-143\s+0$)")) << text;
  EXPECT_TRUE(has_line(text, R"(^\s+GPU1\s+NV18\s+X\s+0-47,96-143\s+0$)")) << text;
  // The P2P line spells the links out: 18 x NVLink 4.0 at 26.5625 GB/s = 478.1 GB/s one way.
  EXPECT_TRUE(has_line(text, R"(^# P2P GPU0-GPU1: NV18 = 18 x NVLink 4\.0, 26\.5625 GB/s .*\(478\.1 GB/s\))"))
      << text;
  EXPECT_TRUE(has_line(text, R"(P2P read OK, write OK; CUDA peer access yes, performance rank 0$)")) << text;
}

TEST(TopologyPrint, HeaderGpuTableAndAdapters) {
  const std::string text = printed(test::report_of({test::two_h200_node()}, 2));
  EXPECT_TRUE(has_line(text, R"(^# scalebench topo )")) << text;
  EXPECT_TRUE(has_line(text, R"(^# hosts: 1 \(h200-node\)  ranks: 2  NVML: found, driver 570\.124\.06$)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(^# NCCL transport in use: P2P/CUMEM$)")) << text;
  // GPU table: a column row, a units row, one row per GPU with fixed columns.
  EXPECT_TRUE(
      has_line(text, R"(^#  gpu  name\s+bus_id\s+memory\s+cc\s+numa\s+cpu_affinity\s+pcie_now\s+pcie_max$)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(^#\s+\(GiB\)$)")) << text;
  EXPECT_TRUE(has_line(
      text, R"(^\s+1  NVIDIA H200\s+0000:3b:00\.0\s+140\.4  9\.0\s+0\s+0-47,96-143\s+gen5 x16\s+gen5 x16$)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(^\s+mlx5_0:1\s+infiniband\s+400000  active\s+0\s+rdma$)")) << text;
  EXPECT_TRUE(has_line(text, R"(^\s+eth0\s+ethernet\s+-  up\s+-\s+virtual$)")) << text;
  EXPECT_TRUE(has_line(text, R"(^# 1 node, 2 GPUs, 2 ranks$)")) << text;
}

TEST(TopologyPrint, WithoutNvmlOrGpus) {
  TopoReport report = test::report_of({test::gpuless_node(0, "ci-runner")}, 1);
  report.transport_probed = false;
  report.transports.clear();
  report.transport_note = "CPU device";
  const std::string text = printed(report);
  EXPECT_TRUE(has_line(text, R"(^# hosts: 1 \(ci-runner\)  ranks: 1  NVML absent: CUDA runtime facts only$)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(^# NCCL transport in use: not probed \(CPU device\)$)")) << text;
  EXPECT_TRUE(has_line(text, R"(^# CUDA: no CUDA device visible)")) << text;
  EXPECT_TRUE(has_line(text, R"(^# NVML absent: cannot load libnvidia-ml\.so\.1$)")) << text;
  EXPECT_FALSE(has_line(text, R"(GPU0)")) << text;  // no table, no matrix
  EXPECT_TRUE(has_line(text, R"(^# network adapters: none found$)")) << text;
}

TEST(TopologyPrint, PcieOnlyPairWithoutNvml) {
  NodeTopology node = test::two_h200_node();
  node.nvml_available = false;
  node.driver_version.clear();
  GpuPair& pair = node.pairs[0];
  pair.nvlink_count = 0;
  pair.nvlink_version.clear();
  pair.nvlink_link_gbps = 0;
  pair.pcie_path.clear();  // only NVML knows the PCIe path
  pair.path_type.clear();
  pair.p2p_read_status.clear();
  pair.p2p_write_status.clear();
  pair.p2p_read = pair.p2p_write = false;
  pair.cuda_peer_access = false;
  pair.cuda_performance_rank = -1;
  const std::string text = printed(test::report_of({node}, 1));
  EXPECT_TRUE(has_line(text, R"(^\s+GPU0\s+X\s+\?\s)")) << text;
  EXPECT_TRUE(has_line(text, R"(^# P2P GPU0-GPU1: \?; P2P read/write no \(CUDA peer access\); )"
                             R"(CUDA peer access no, performance rank -$)"))
      << text;
}

TEST(TopologyPrint, OtherBackendsAreNamed) {
  TopoReport report = test::report_of({test::two_h200_node()}, 2);
  report.transport_backend = "mpi";
  report.transports = {"MPI"};
  EXPECT_TRUE(has_line(printed(report), R"(^# transport in use \(mpi backend, not NCCL\): MPI$)"));
  report.transport_backend = "nccl";
  report.transports = {"P2P/CUMEM", "NET/IB/0/GDRDMA"};
  EXPECT_TRUE(has_line(printed(report), R"(^# NCCL transport in use: P2P/CUMEM, NET/IB/0/GDRDMA$)"));
}

}  // namespace
}  // namespace sb
