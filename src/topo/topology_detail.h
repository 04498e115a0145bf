// Internals of `scalebench topo` (include/scalebench/topology.h): the pure conversions the discovery code
// and the printers share, the sysfs readers (with the sysfs root as a parameter so tests can point them
// at a fake tree), and the sources that fill a NodeTopology. None of it needs a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/topology.h"

namespace sb {
namespace detail {

constexpr const char* kSysfsRoot = "/sys";

// ---- pure conversions (topology_format.cpp)

// CPU bitmask words (bit b of word w = CPU w*64+b) -> "0-15,32-47"; "" when no bit is set.
std::string cpu_list_from_mask(const std::vector<uint64_t>& words);

// NVML's nvmlGpuTopologyLevel_t value -> the `nvidia-smi topo -m` code; "" for an unknown level.
std::string pcie_path_from_nvml_level(int level);

// "NV<count>" when NVLink joins the pair, else the PCIe path ("" stays "": unknown).
std::string pair_label(int nvlink_count, const std::string& pcie_path);

// NVML's nvmlDeviceGetNvLinkVersion value is an nvmlNvlinkVersion_t enum (1 = "1.0", 3 = "2.2",
// 6 = "4.0", ...), not a version number; "" for values outside the enum.
std::string nvlink_version_from_nvml(unsigned value);

// The NVLink version of a GPU architecture (compute capability 90 -> "4.0"); "" when the architecture
// has no NVLink or is not in the table.
std::string nvlink_version_for_compute_capability(int compute_capability);

// Raw rate of one link in one direction, GB/s, as `nvidia-smi nvlink -s` reports it; 0 when unknown.
double nvlink_link_gbps(const std::string& version);

// "16.0 GT/s PCIe" (sysfs current_link_speed) -> 4; 0 when unknown.
int pcie_gen_from_link_speed(const std::string& speed);

// Any of "0000:19:00.0", "00000000:19:00.0", "19:00.0" (upper or lower case) -> "0000:19:00.0"; ""
// when the text is not a PCI address.
std::string normalize_bus_id(const std::string& bus_id);

// NVML's nvmlGpuP2PStatus_t value -> the code `nvidia-smi topo -p2p` prints ("OK", "CNS", ...).
std::string p2p_status_code(int status);

// ---- sysfs (sysfs_topology.cpp)

// Adapters under <root>/class/net (lo skipped) and RDMA ports under <root>/class/infiniband, by name.
std::vector<NetworkAdapter> read_network_adapters(const std::string& sysfs_root);

// Fills numa_node, cpu_affinity and the PCIe link fields that are still unknown from
// <root>/bus/pci/devices/<bus_id>/ (numa_node, local_cpulist, {current,max}_link_{speed,width}).
void add_sysfs_gpu_facts(const std::string& sysfs_root, GpuInfo& gpu);

// ---- sources that fill a node (cuda_topology_{cuda,without_cuda}.cpp, nvml_topology.cpp)

// GPUs visible to the CUDA runtime and the CUDA facts of every pair; sets node.cuda_note when there are
// none. Never throws: no driver or no GPU means zero GPUs.
void add_cuda_facts(NodeTopology& node);

// Opens NVML and adds what it knows to the GPUs and pairs already in `node`: CPU affinity, NUMA node
// (memory affinity, when sysfs did not know it), PCIe link state, NVLink count/version, the PCIe path and
// the P2P status; sets nvml_available, nvml_note (why absent, or which calls failed) and driver_version.
void add_nvml_facts(NodeTopology& node);

// ---- the command (topo_command.cpp), split so that tests can run the parts a real job would

// What one rank contributes to rank 0: its placement and, on node-local rank 0, its node.
std::string rank_entry_json(const RankPlacement& placement, const NodeTopology* node);
// Rank 0: the entries of all ranks, in rank order -> the report. Throws RuntimeFailure on bad input.
TopoReport assemble_topo_report(const std::vector<std::string>& rank_entries);

}  // namespace detail
}  // namespace sb
