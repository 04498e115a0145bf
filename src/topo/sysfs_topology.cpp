// Facts the Linux kernel publishes in sysfs: network adapters (/sys/class/net, /sys/class/infiniband) and
// the PCI side of each GPU (NUMA node, nearest CPUs, PCIe link). They need neither NVML nor the CUDA
// driver. The root is a parameter so that tests run the readers on a fake tree in a temporary directory.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/topo/topology_detail.h"

namespace sb {
namespace detail {
namespace {

namespace fs = std::filesystem;

// First line of a sysfs attribute, trimmed; false when it cannot be read (some attributes, such as the
// speed of a link that is down, fail on read rather than on open).
bool read_line(const fs::path& path, std::string* line) {
  std::ifstream in(path);
  if (!in || !std::getline(in, *line)) return false;
  const auto last = line->find_last_not_of(" \t\r\n");
  line->erase(last == std::string::npos ? 0 : last + 1);
  return true;
}

bool read_int(const fs::path& path, int64_t* value) {
  std::string line;
  if (!read_line(path, &line) || line.empty()) return false;
  char* end = nullptr;
  const long long parsed = std::strtoll(line.c_str(), &end, 10);
  if (end == line.c_str()) return false;
  *value = parsed;
  return true;
}

int read_numa_node(const fs::path& device_dir) {
  int64_t node = -1;
  if (!read_int(device_dir / "numa_node", &node) || node < 0) return -1;  // -1: the kernel does not know
  return static_cast<int>(node);
}

std::vector<std::string> sorted_entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

NetworkAdapter read_net_interface(const fs::path& dir, const std::string& name) {
  NetworkAdapter adapter;
  adapter.name = name;
  int64_t type = -1;
  read_int(dir / "type", &type);
  // include/uapi/linux/if_arp.h: ARPHRD_ETHER 1, ARPHRD_INFINIBAND 32 (IPoIB).
  adapter.kind = type == 1 ? "ethernet" : type == 32 ? "infiniband" : "other";
  int64_t speed = -1;
  if (read_int(dir / "speed", &speed) && speed > 0) adapter.speed_mbps = speed;  // Mb/s; -1 when down
  if (!read_line(dir / "operstate", &adapter.state) || adapter.state.empty()) adapter.state = "unknown";
  std::error_code error;
  adapter.is_virtual = !fs::exists(dir / "device", error);
  if (!adapter.is_virtual) adapter.numa_node = read_numa_node(dir / "device");
  return adapter;
}

// "400 Gb/sec (4X NDR)" -> 400000 Mb/s; -1 when unreadable.
int64_t rdma_rate_mbps(const std::string& rate) {
  char* end = nullptr;
  const double value = std::strtod(rate.c_str(), &end);
  if (end == rate.c_str() || value <= 0) return -1;
  const std::string unit = lower(end);
  if (unit.find("gb/s") != std::string::npos) return static_cast<int64_t>(value * 1000 + 0.5);
  if (unit.find("mb/s") != std::string::npos) return static_cast<int64_t>(value + 0.5);
  return -1;
}

void read_rdma_ports(const fs::path& dir, const std::string& device, std::vector<NetworkAdapter>& out) {
  std::error_code error;
  const bool is_virtual = !fs::exists(dir / "device", error);  // rxe (soft RoCE) has no device
  const int numa_node = is_virtual ? -1 : read_numa_node(dir / "device");
  std::vector<std::string> ports = sorted_entries(dir / "ports");
  std::sort(ports.begin(), ports.end(), [](const std::string& a, const std::string& b) {
    return std::atoi(a.c_str()) < std::atoi(b.c_str());
  });
  for (const std::string& port : ports) {
    const fs::path port_dir = dir / "ports" / port;
    NetworkAdapter adapter;
    adapter.name = device + ":" + port;
    adapter.rdma = true;
    adapter.is_virtual = is_virtual;
    adapter.numa_node = numa_node;
    std::string layer;
    read_line(port_dir / "link_layer", &layer);
    adapter.kind = lower(layer) == "ethernet" ? "ethernet" : "infiniband";  // RoCE reports Ethernet
    std::string rate;
    if (read_line(port_dir / "rate", &rate)) adapter.speed_mbps = rdma_rate_mbps(rate);
    // "4: ACTIVE" -> "active"
    std::string state;
    read_line(port_dir / "state", &state);
    const auto colon = state.find(':');
    state = colon == std::string::npos ? state : state.substr(colon + 1);
    state.erase(0, state.find_first_not_of(' '));
    adapter.state = state.empty() ? "unknown" : lower(state);
    out.push_back(adapter);
  }
}

}  // namespace

std::vector<NetworkAdapter> read_network_adapters(const std::string& sysfs_root) {
  std::vector<NetworkAdapter> adapters;
  const fs::path net = fs::path(sysfs_root) / "class" / "net";
  for (const std::string& name : sorted_entries(net)) {
    if (name == "lo") continue;
    adapters.push_back(read_net_interface(net / name, name));
  }
  const fs::path rdma = fs::path(sysfs_root) / "class" / "infiniband";
  for (const std::string& device : sorted_entries(rdma)) read_rdma_ports(rdma / device, device, adapters);
  return adapters;
}

void add_sysfs_gpu_facts(const std::string& sysfs_root, GpuInfo& gpu) {
  if (gpu.bus_id.empty()) return;
  const fs::path dir = fs::path(sysfs_root) / "bus" / "pci" / "devices" / gpu.bus_id;
  if (gpu.numa_node < 0) gpu.numa_node = read_numa_node(dir);
  std::string line;
  if (gpu.cpu_affinity.empty() && read_line(dir / "local_cpulist", &line)) gpu.cpu_affinity = line;
  int64_t width = 0;
  if (gpu.pcie_gen_current == 0 && read_line(dir / "current_link_speed", &line)) {
    gpu.pcie_gen_current = pcie_gen_from_link_speed(line);
  }
  if (gpu.pcie_width_current == 0 && read_int(dir / "current_link_width", &width) && width > 0) {
    gpu.pcie_width_current = static_cast<int>(width);
  }
  if (gpu.pcie_gen_max == 0 && read_line(dir / "max_link_speed", &line)) {
    gpu.pcie_gen_max = pcie_gen_from_link_speed(line);
  }
  if (gpu.pcie_width_max == 0 && read_int(dir / "max_link_width", &width) && width > 0) {
    gpu.pcie_width_max = static_cast<int>(width);
  }
}

}  // namespace detail
}  // namespace sb
