// discover_node_topology(): the node this process runs on, put together from its sources in an order
// that lets the better source win: the CUDA runtime lists the GPUs, sysfs adds the PCI side (NUMA node,
// nearest CPUs, PCIe link), NVML adds NVLink, the PCIe path and P2P status and replaces affinity and link
// state with its own view, and sysfs lists the network adapters.
#include "scalebench/topology.h"
#include "src/bootstrap/host_name.h"
#include "src/topo/topology_detail.h"

namespace sb {

NodeTopology discover_node_topology() {
  NodeTopology node;
  node.host = short_host_name();
  detail::add_cuda_facts(node);
  for (GpuInfo& gpu : node.gpus) detail::add_sysfs_gpu_facts(detail::kSysfsRoot, gpu);
  // Opened even without GPUs: whether NVML is there and the driver version are facts of their own.
  detail::add_nvml_facts(node);
  node.network_adapters = detail::read_network_adapters(detail::kSysfsRoot);
  return node;
}

}  // namespace sb
