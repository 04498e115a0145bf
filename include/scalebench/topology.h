// `scalebench topo`: what each node of the job has (GPUs, the link between every GPU pair, P2P support,
// network adapters) and which transport NCCL actually used. Discovery reads the CUDA runtime, NVML
// (opened at run time with dlopen, never needed to build) and sysfs; every fact has an "unknown" value
// (-1, 0 or an empty string) so that a missing source removes only what it would have told.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/process_group.h"

namespace sb {

struct GpuInfo {
  int index = 0;       // CUDA ordinal among the devices visible to this process
  std::string name;    // "NVIDIA H200"
  std::string bus_id;  // "0000:19:00.0": lower-case, as sysfs names it
  uint64_t total_memory_bytes = 0;
  int compute_capability = 0;  // 90 for sm_90; 0 unknown
  int numa_node = -1;          // NUMA node of the CPUs nearest the GPU; -1 unknown
  int gpu_numa_id = -1;        // the GPU memory's own NUMA node (coherent platforms: GH200); -1 none
  std::string cpu_affinity;    // CPUs nearest the GPU, "0-15,32-47"; empty unknown
  int pcie_gen_current = 0;    // 0 unknown; idle GPUs often train down, so compare with max
  int pcie_width_current = 0;  // lanes
  int pcie_gen_max = 0;
  int pcie_width_max = 0;
};

// One unordered GPU pair (gpu_a < gpu_b, both CUDA ordinals), seen from gpu_a.
struct GpuPair {
  int gpu_a = 0;
  int gpu_b = 0;
  int nvlink_count = 0;         // links joining the two, directly or through NVSwitch
  std::string nvlink_version;   // "4.0"; empty without NVLink or when unknown
  double nvlink_link_gbps = 0;  // raw rate of one link, one direction, GB/s; 0 unknown
  std::string pcie_path;        // "PIX", "PXB", "PHB", "NODE", "SYS"; empty unknown
  std::string path_type;        // as `nvidia-smi topo -m` prints it: "NV18" when NVLink, else pcie_path
  bool p2p_read = false;        // NVML's P2P read/write status when NVML is there, else CUDA peer access
  bool p2p_write = false;
  std::string p2p_read_status;  // NVML code: "OK", "CNS", "GNS", "TNS", "NS", "U"; empty without NVML
  std::string p2p_write_status;
  bool cuda_peer_access = false;   // cudaDeviceCanAccessPeer(gpu_a, gpu_b)
  int cuda_performance_rank = -1;  // cudaDevP2PAttrPerformanceRank (lower is faster); -1 unknown
};

struct NetworkAdapter {
  std::string name;         // "eth0", "ib0", or "mlx5_0:1" for an RDMA port
  std::string kind;         // "ethernet", "infiniband" or "other"
  int64_t speed_mbps = -1;  // Mb/s; -1 unknown (down links and virtual devices report none)
  std::string state;        // "up", "down", ... as the kernel reports it
  bool rdma = false;        // an RDMA port (/sys/class/infiniband), RoCE included
  bool is_virtual = false;  // no PCI/platform device behind it (bridge, veth, bond)
  int numa_node = -1;
};

struct NodeTopology {
  std::string host;
  int node_index = 0;
  int local_ranks = 1;  // ranks of the job on this node
  bool nvml_available = false;
  std::string nvml_note;       // why NVML is absent, or which of its facts were missing
  std::string driver_version;  // from NVML; empty without it
  std::string cuda_note;       // "no CUDA device visible (...)" and the like
  std::vector<GpuInfo> gpus;
  std::vector<GpuPair> pairs;  // every gpu_a < gpu_b
  std::vector<NetworkAdapter> network_adapters;
};

// Where one rank ran and which transport its communicator reported.
struct RankPlacement {
  int rank = 0;
  int node_index = 0;
  std::string host;
  int local_rank = 0;
  std::string device;     // "cuda:0", "cpu"
  std::string transport;  // Communicator::transport() after the probe; empty when not probed
};

// Everything `scalebench topo` reports for one job; rank 0 assembles and prints it.
struct TopoReport {
  int world_size = 1;
  std::vector<NodeTopology> nodes;   // ordered by node_index
  std::vector<RankPlacement> ranks;  // ordered by rank
  bool transport_probed = false;
  std::string transport_backend;        // "nccl", "mpi", "local"
  std::vector<std::string> transports;  // distinct transports the ranks reported, in rank order
  std::string transport_note;           // why it was not probed ("CPU device", "no communicator")
};

struct TopoOptions {
  std::string json_path;  // "-" = stdout (then the console report is not printed)
};

// This process's node: all GPUs visible to it (zero is fine), their pairs and the network adapters.
NodeTopology discover_node_topology();

// Collective: every node's topology (discovered by its node-local rank 0) and every rank's placement, the same
// report on every rank. `transport`: this rank's probed transport, or "" when not probed.
TopoReport gather_topology(ProcessGroup& group, const Device* device, const std::string& transport = "");

// Node-local rank 0 of every node discovers its node; when `communicator` and a CUDA `device` are given,
// every rank runs one small all_reduce so that the transport NCCL chose is known; rank 0 gathers
// everything, prints the console report and writes `options.json_path`. Returns the exit code.
// Collective: every rank of `group` must call it. Throws UsageError when the JSON file cannot be written.
int run_topo_command(const TopoOptions& options, ProcessGroup& group, Device* device,
                     Communicator* communicator);

// Printers (rank 0): the console report and the JSON document (schema_version 1).
void print_topo_report(std::ostream& out, const TopoReport& report);
std::string topo_report_json(const TopoReport& report);

// One node as JSON text and back, the form in which nodes travel to rank 0.
std::string node_topology_to_json(const NodeTopology& node);
NodeTopology node_topology_from_json(const std::string& text);  // throws RuntimeFailure on bad input
// A `topo --json` document read back (ranks, nodes, world size; the transport block is not read).
TopoReport topo_report_from_json(const std::string& text);  // throws RuntimeFailure on bad input

}  // namespace sb
