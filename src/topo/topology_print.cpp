// Console report of `scalebench topo` (rank 0): a `#` header (hosts, ranks, NVML, NCCL transport), then per
// node a GPU table with a units row, a link matrix laid out like `nvidia-smi topo -m`, one P2P line per
// GPU pair and the network adapters. Unknown facts print as "-" (tables) or "?" (matrix).
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "scalebench/topology.h"

namespace sb {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }
std::string or_dash(int value) { return value < 0 ? "-" : std::to_string(value); }

std::string pcie_link(int gen, int width) {
  if (gen <= 0 && width <= 0) return "-";
  return (gen > 0 ? "gen" + std::to_string(gen) : "gen?") + " x" + (width > 0 ? std::to_string(width) : "?");
}

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}
std::string pad_left(const std::string& text, size_t width) {
  return text.size() >= width ? " " + text : std::string(width - text.size(), ' ') + text;
}

const GpuPair* find_pair(const NodeTopology& node, int a, int b) {
  for (const GpuPair& pair : node.pairs) {
    if ((pair.gpu_a == a && pair.gpu_b == b) || (pair.gpu_a == b && pair.gpu_b == a)) return &pair;
  }
  return nullptr;
}

void print_header(std::ostream& out, const TopoReport& report) {
  out << "# scalebench topo (scalebench " << SB_VERSION << ")\n";
  std::string hosts;
  size_t with_nvml = 0;
  std::string driver;
  for (const NodeTopology& node : report.nodes) {
    hosts += (hosts.empty() ? "" : ", ") + node.host;
    if (node.nvml_available) ++with_nvml;
    if (driver.empty()) driver = node.driver_version;
  }
  out << "# hosts: " << report.nodes.size() << " (" << hosts << ")  ranks: " << report.world_size << "  ";
  if (with_nvml == report.nodes.size() && with_nvml > 0) {
    out << "NVML: found" << (driver.empty() ? "" : ", driver " + driver) << "\n";
  } else if (with_nvml == 0) {
    out << "NVML absent: CUDA runtime facts only\n";
  } else {
    out << "NVML: found on " << with_nvml << " of " << report.nodes.size() << " hosts\n";
  }
  if (!report.transport_probed) {
    out << "# NCCL transport in use: not probed (" << or_dash(report.transport_note) << ")\n";
    return;
  }
  std::string transports;
  for (const std::string& t : report.transports) transports += (transports.empty() ? "" : ", ") + t;
  if (transports.empty()) transports = "unknown (the communicator reported none)";
  if (report.transport_backend == "nccl") {
    out << "# NCCL transport in use: " << transports << "\n";
  } else {
    out << "# transport in use (" << report.transport_backend << " backend, not NCCL): " << transports
        << "\n";
  }
}

void print_gpu_table(std::ostream& out, const NodeTopology& node) {
  size_t name_width = 4;
  for (const GpuInfo& gpu : node.gpus) name_width = std::max(name_width, gpu.name.size());
  name_width += 2;
  out << "#  gpu  " << pad("name", name_width) << pad("bus_id", 14) << pad_left("memory", 8) << "  "
      << pad("cc", 5) << pad("numa", 6) << pad("cpu_affinity", 18) << pad("pcie_now", 10) << "pcie_max\n";
  out << "#       " << pad("", name_width) << pad("", 14) << pad_left("(GiB)", 8) << "\n";
  for (const GpuInfo& gpu : node.gpus) {
    const std::string cc = gpu.compute_capability > 0 ? std::to_string(gpu.compute_capability / 10) + "." +
                                                            std::to_string(gpu.compute_capability % 10)
                                                      : "-";
    out << "   " << pad_left(std::to_string(gpu.index), 3) << "  " << pad(or_dash(gpu.name), name_width)
        << pad(or_dash(gpu.bus_id), 14)
        << pad_left(format("%.1f", static_cast<double>(gpu.total_memory_bytes) / kBytesPerGiB), 8) << "  "
        << pad(cc, 5) << pad(or_dash(gpu.numa_node), 6) << pad(or_dash(gpu.cpu_affinity), 18)
        << pad(pcie_link(gpu.pcie_gen_current, gpu.pcie_width_current), 10)
        << pcie_link(gpu.pcie_gen_max, gpu.pcie_width_max) << "\n";
  }
}

void print_matrix(std::ostream& out, const NodeTopology& node) {
  size_t cell = 4;
  for (const GpuInfo& gpu : node.gpus) cell = std::max(cell, ("GPU" + std::to_string(gpu.index)).size());
  for (const GpuPair& pair : node.pairs) cell = std::max(cell, pair.path_type.size());
  cell += 2;
  out << "#      ";
  for (const GpuInfo& gpu : node.gpus) out << pad_left("GPU" + std::to_string(gpu.index), cell);
  out << "  CPU Affinity      NUMA\n";
  for (const GpuInfo& row : node.gpus) {
    out << "  " << pad("GPU" + std::to_string(row.index), 5);
    for (const GpuInfo& column : node.gpus) {
      std::string label = "X";
      if (column.index != row.index) {
        const GpuPair* pair = find_pair(node, row.index, column.index);
        label = pair && !pair->path_type.empty() ? pair->path_type : "?";
      }
      out << pad_left(label, cell);
    }
    out << "  " << pad(or_dash(row.cpu_affinity), 18) << or_dash(row.numa_node) << "\n";
  }
  out << "# Legend: X = self, NV# = # bonded NVLinks, PIX = at most one PCIe bridge, PXB = several PCIe\n"
         "#   bridges, PHB = a PCIe host bridge, NODE = host bridges of one NUMA node, SYS = across NUMA\n"
         "#   nodes (SMP interconnect), ? = unknown\n";
}

void print_pairs(std::ostream& out, const NodeTopology& node) {
  for (const GpuPair& pair : node.pairs) {
    std::ostringstream line;
    line << "# P2P GPU" << pair.gpu_a << "-GPU" << pair.gpu_b << ": "
         << (pair.path_type.empty() ? "?" : pair.path_type);
    if (pair.nvlink_count > 0) {
      line << " = " << pair.nvlink_count << " x NVLink " << or_dash(pair.nvlink_version);
      if (pair.nvlink_link_gbps > 0) {
        line << ", " << format("%g", pair.nvlink_link_gbps) << " GB/s raw per link per direction ("
             << format("%.1f", pair.nvlink_count * pair.nvlink_link_gbps) << " GB/s)";
      }
    }
    if (!pair.pcie_path.empty() && pair.nvlink_count > 0) line << "; PCIe path " << pair.pcie_path;
    if (!pair.p2p_read_status.empty() || !pair.p2p_write_status.empty()) {
      line << "; P2P read " << or_dash(pair.p2p_read_status) << ", write " << or_dash(pair.p2p_write_status);
    } else {
      line << "; P2P read/write " << (pair.p2p_read ? "yes" : "no") << " (CUDA peer access)";
    }
    line << "; CUDA peer access " << (pair.cuda_peer_access ? "yes" : "no") << ", performance rank "
         << or_dash(pair.cuda_performance_rank);
    out << line.str() << "\n";
  }
}

void print_adapters(std::ostream& out, const NodeTopology& node) {
  if (node.network_adapters.empty()) {
    out << "# network adapters: none found\n";
    return;
  }
  out << "# network adapters\n";
  size_t name_width = 4;
  for (const NetworkAdapter& a : node.network_adapters) name_width = std::max(name_width, a.name.size());
  name_width += 2;
  out << "#  " << pad("name", name_width) << pad("kind", 12) << pad_left("speed", 10) << "  "
      << pad("state", 10) << pad("numa", 6) << "notes\n";
  out << "#  " << pad("", name_width) << pad("", 12) << pad_left("(Mb/s)", 10) << "\n";
  for (const NetworkAdapter& a : node.network_adapters) {
    std::string notes = a.rdma ? "rdma" : "";
    if (a.is_virtual) notes += notes.empty() ? "virtual" : ", virtual";
    out << "   " << pad(a.name, name_width) << pad(or_dash(a.kind), 12)
        << pad_left(a.speed_mbps < 0 ? "-" : std::to_string(a.speed_mbps), 10) << "  "
        << pad(or_dash(a.state), 10) << pad(or_dash(a.numa_node), 6) << notes << "\n";
  }
}

}  // namespace

void print_topo_report(std::ostream& out, const TopoReport& report) {
  print_header(out, report);
  size_t gpu_total = 0;
  for (const NodeTopology& node : report.nodes) {
    gpu_total += node.gpus.size();
    out << "#\n# node " << node.node_index << ": " << node.host << " (" << node.gpus.size() << " GPUs, "
        << node.local_ranks << (node.local_ranks == 1 ? " rank)" : " ranks)") << "\n";
    if (!node.cuda_note.empty()) out << "# CUDA: " << node.cuda_note << "\n";
    if (!node.nvml_available) {
      out << "# NVML absent: " << or_dash(node.nvml_note) << "\n";
    } else if (!node.nvml_note.empty()) {
      out << "# NVML notes: " << node.nvml_note << "\n";
    }
    if (!node.gpus.empty()) {
      print_gpu_table(out, node);
      out << "#\n";
      print_matrix(out, node);
      print_pairs(out, node);
    }
    out << "#\n";
    print_adapters(out, node);
  }
  out << "#\n# " << report.nodes.size() << (report.nodes.size() == 1 ? " node, " : " nodes, ") << gpu_total
      << " GPUs, " << report.world_size << (report.world_size == 1 ? " rank" : " ranks") << "\n";
}

}  // namespace sb
