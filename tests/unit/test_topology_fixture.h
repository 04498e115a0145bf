// Hand-built topologies for the `scalebench topo` tests: the 2 x H200 node the command is checked against
// on real hardware (18 NVLink 4 links between the GPUs), and a node with no GPU, as CI machines have.
#pragma once

#include <string>
#include <vector>

#include "scalebench/topology.h"

namespace sb::test {

inline NodeTopology two_h200_node() {
  NodeTopology node;
  node.host = "h200-node";
  node.node_index = 0;
  node.local_ranks = 2;
  node.nvml_available = true;
  node.driver_version = "570.124.06";
  for (int i = 0; i < 2; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.name = "NVIDIA H200";
    gpu.bus_id = i == 0 ? "0000:19:00.0" : "0000:3b:00.0";
    gpu.total_memory_bytes = 150754820096ull;  // 140.4 GiB
    gpu.compute_capability = 90;
    gpu.numa_node = 0;
    gpu.gpu_numa_id = i == 0 ? 2 : -1;  // a value the round trip must keep, and the default
    gpu.cpu_affinity = "0-47,96-143";
    gpu.pcie_gen_current = 5;
    gpu.pcie_width_current = 16;
    gpu.pcie_gen_max = 5;
    gpu.pcie_width_max = 16;
    node.gpus.push_back(gpu);
  }
  GpuPair pair;
  pair.gpu_a = 0;
  pair.gpu_b = 1;
  pair.nvlink_count = 18;
  pair.nvlink_version = "4.0";
  pair.nvlink_link_gbps = 26.5625;
  pair.pcie_path = "NODE";
  pair.path_type = "NV18";
  pair.p2p_read = pair.p2p_write = true;
  pair.p2p_read_status = pair.p2p_write_status = "OK";
  pair.cuda_peer_access = true;
  pair.cuda_performance_rank = 0;
  node.pairs.push_back(pair);
  NetworkAdapter ib;
  ib.name = "mlx5_0:1";
  ib.kind = "infiniband";
  ib.speed_mbps = 400000;
  ib.state = "active";
  ib.rdma = true;
  ib.numa_node = 0;
  node.network_adapters.push_back(ib);
  NetworkAdapter eth;
  eth.name = "eth0";
  eth.kind = "ethernet";
  eth.state = "up";
  eth.is_virtual = true;
  node.network_adapters.push_back(eth);
  return node;
}

inline NodeTopology gpuless_node(int node_index, const std::string& host) {
  NodeTopology node;
  node.host = host;
  node.node_index = node_index;
  node.nvml_available = false;
  node.nvml_note = "cannot load libnvidia-ml.so.1";
  node.cuda_note = "no CUDA device visible (cudaGetDeviceCount: cudaErrorNoDevice)";
  return node;
}

inline TopoReport report_of(const std::vector<NodeTopology>& nodes, int world_size) {
  TopoReport report;
  report.world_size = world_size;
  report.nodes = nodes;
  for (int r = 0; r < world_size; ++r) {
    RankPlacement placement;
    placement.rank = r;
    placement.host = nodes.empty() ? "" : nodes[0].host;
    placement.local_rank = r;
    placement.device = "cuda:" + std::to_string(r);
    placement.transport = "P2P/CUMEM";
    report.ranks.push_back(placement);
  }
  report.transport_probed = true;
  report.transport_backend = "nccl";
  report.transports = {"P2P/CUMEM"};
  return report;
}

}  // namespace sb::test
