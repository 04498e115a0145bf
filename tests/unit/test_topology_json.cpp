// Unit tests of the JSON forms of `scalebench topo` (src/topo/topology_json.cpp): a node survives the trip
// to rank 0 field for field, rank 0 assembles the per-rank entries in order, and the --json document has
// the schema the other commands' documents have (schema_version 1, tool, command).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/topology.h"
#include "src/topo/topology_detail.h"
#include "tests/unit/test_topology_fixture.h"

namespace sb {
namespace {

void expect_same(const NodeTopology& a, const NodeTopology& b) {
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.node_index, b.node_index);
  EXPECT_EQ(a.local_ranks, b.local_ranks);
  EXPECT_EQ(a.nvml_available, b.nvml_available);
  EXPECT_EQ(a.nvml_note, b.nvml_note);
  EXPECT_EQ(a.driver_version, b.driver_version);
  EXPECT_EQ(a.cuda_note, b.cuda_note);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuInfo& x = a.gpus[i];
    const GpuInfo& y = b.gpus[i];
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.bus_id, y.bus_id);
    EXPECT_EQ(x.total_memory_bytes, y.total_memory_bytes);
    EXPECT_EQ(x.compute_capability, y.compute_capability);
    EXPECT_EQ(x.numa_node, y.numa_node);
    EXPECT_EQ(x.gpu_numa_id, y.gpu_numa_id);
    EXPECT_EQ(x.cpu_affinity, y.cpu_affinity);
    EXPECT_EQ(x.pcie_gen_current, y.pcie_gen_current);
    EXPECT_EQ(x.pcie_width_current, y.pcie_width_current);
    EXPECT_EQ(x.pcie_gen_max, y.pcie_gen_max);
    EXPECT_EQ(x.pcie_width_max, y.pcie_width_max);
  }
  ASSERT_EQ(a.pairs.size(), b.pairs.size());
  for (size_t i = 0; i < a.pairs.size(); ++i) {
    const GpuPair& x = a.pairs[i];
    const GpuPair& y = b.pairs[i];
    EXPECT_EQ(x.gpu_a, y.gpu_a);
    EXPECT_EQ(x.gpu_b, y.gpu_b);
    EXPECT_EQ(x.nvlink_count, y.nvlink_count);
    EXPECT_EQ(x.nvlink_version, y.nvlink_version);
    EXPECT_DOUBLE_EQ(x.nvlink_link_gbps, y.nvlink_link_gbps);
    EXPECT_EQ(x.pcie_path, y.pcie_path);
    EXPECT_EQ(x.path_type, y.path_type);
    EXPECT_EQ(x.p2p_read, y.p2p_read);
    EXPECT_EQ(x.p2p_write, y.p2p_write);
    EXPECT_EQ(x.p2p_read_status, y.p2p_read_status);
    EXPECT_EQ(x.p2p_write_status, y.p2p_write_status);
    EXPECT_EQ(x.cuda_peer_access, y.cuda_peer_access);
    EXPECT_EQ(x.cuda_performance_rank, y.cuda_performance_rank);
  }
  ASSERT_EQ(a.network_adapters.size(), b.network_adapters.size());
  for (size_t i = 0; i < a.network_adapters.size(); ++i) {
    const NetworkAdapter& x = a.network_adapters[i];
    const NetworkAdapter& y = b.network_adapters[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.speed_mbps, y.speed_mbps);
    EXPECT_EQ(x.state, y.state);
    EXPECT_EQ(x.rdma, y.rdma);
    EXPECT_EQ(x.is_virtual, y.is_virtual);
    EXPECT_EQ(x.numa_node, y.numa_node);
  }
}

TEST(TopologyJson, NodeRoundTrip) {
  const NodeTopology node = test::two_h200_node();
  expect_same(node, node_topology_from_json(node_topology_to_json(node)));
  const NodeTopology empty = test::gpuless_node(3, "cpu-node");
  expect_same(empty, node_topology_from_json(node_topology_to_json(empty)));
}

TEST(TopologyJson, MissingKeysReadAsUnknown) {
  const NodeTopology node = node_topology_from_json(R"({"gpus": [{"index": 1}], "pairs": [{}]})");
  ASSERT_EQ(node.gpus.size(), 1u);
  EXPECT_EQ(node.gpus[0].index, 1);
  EXPECT_EQ(node.gpus[0].numa_node, -1);
  EXPECT_EQ(node.gpus[0].pcie_gen_max, 0);
  ASSERT_EQ(node.pairs.size(), 1u);
  EXPECT_EQ(node.pairs[0].cuda_performance_rank, -1);
  EXPECT_FALSE(node.nvml_available);
}

TEST(TopologyJson, MalformedInputIsARuntimeFailure) {
  EXPECT_THROW(node_topology_from_json("not json"), RuntimeFailure);
  EXPECT_THROW(node_topology_from_json("[1, 2]"), RuntimeFailure);
  EXPECT_THROW(node_topology_from_json(R"({"gpus": 7})"), RuntimeFailure);
  EXPECT_THROW(detail::assemble_topo_report({"{"}), RuntimeFailure);
}

TEST(TopologyJson, ReportDocumentSchema) {
  const TopoReport report = test::report_of({test::two_h200_node()}, 2);
  const nlohmann::json document = nlohmann::json::parse(topo_report_json(report));
  EXPECT_EQ(document.at("schema_version"), 1);
  EXPECT_EQ(document.at("tool"), "scalebench");
  EXPECT_EQ(document.at("command"), "topo");
  EXPECT_EQ(document.at("world_size"), 2);
  EXPECT_EQ(document.at("node_count"), 1);
  EXPECT_EQ(document.at("transport").at("probed"), true);
  EXPECT_EQ(document.at("transport").at("backend"), "nccl");
  EXPECT_EQ(document.at("transport").at("in_use"), nlohmann::json::array({"P2P/CUMEM"}));
  ASSERT_EQ(document.at("ranks").size(), 2u);
  EXPECT_EQ(document.at("ranks")[1].at("device"), "cuda:1");
  const nlohmann::json& pair = document.at("nodes")[0].at("pairs")[0];
  EXPECT_EQ(pair.at("path_type"), "NV18");
  EXPECT_EQ(pair.at("nvlink_count"), 18);
  EXPECT_DOUBLE_EQ(pair.at("nvlink_total_gbps").get<double>(), 478.125);
  EXPECT_EQ(document.at("nodes")[0].at("gpus")[1].at("bus_id"), "0000:3b:00.0");
}

TEST(TopologyJson, AssembleOrdersNodesAndRanksAndKeepsDistinctTransports) {
  // Three ranks on two nodes, gathered in rank order; node 1's discoverer is rank 1.
  RankPlacement r0{0, 0, "a", 0, "cuda:0", "P2P/CUMEM"};
  RankPlacement r1{1, 1, "b", 0, "cuda:0", "NET/IB/0/GDRDMA"};
  RankPlacement r2{2, 0, "a", 1, "cuda:1", "P2P/CUMEM"};
  NodeTopology node_a = test::two_h200_node();
  NodeTopology node_b = test::gpuless_node(7, "b");  // index comes from the placement, not the node
  const TopoReport report = detail::assemble_topo_report({detail::rank_entry_json(r1, &node_b),
                                                          detail::rank_entry_json(r0, &node_a),
                                                          detail::rank_entry_json(r2, nullptr)});
  EXPECT_EQ(report.world_size, 3);
  ASSERT_EQ(report.nodes.size(), 2u);
  EXPECT_EQ(report.nodes[0].host, "h200-node");
  EXPECT_EQ(report.nodes[1].host, "b");
  EXPECT_EQ(report.nodes[1].node_index, 1);
  ASSERT_EQ(report.ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(report.ranks[r].rank, r);
  EXPECT_EQ(report.ranks[2].device, "cuda:1");
  EXPECT_EQ(report.transports, (std::vector<std::string>{"P2P/CUMEM", "NET/IB/0/GDRDMA"}));
}

}  // namespace
}  // namespace sb
