// What NVML adds to the GPUs the CUDA runtime found: CPU affinity, PCIe link state, NVLink links and
// their version, the PCIe path between two GPUs and NVML's P2P verdict. GPUs are matched to NVML handles
// by PCI bus id, because CUDA's default order is not NVML's (it is fastest-first unless
// CUDA_DEVICE_ORDER=PCI_BUS_ID). Every call's status is checked; a failed one leaves its fact unknown.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "src/topo/nvml_loader.h"
#include "src/topo/topology_detail.h"

namespace sb {
namespace detail {
namespace {

constexpr unsigned kAffinityWords = 64;  // 64 x 64 = 4096 CPUs

// NVLink endpoints of one GPU.
struct LinkSummary {
  std::map<size_t, int> links_to_gpu;  // node.gpus index -> links that end on that GPU
  int links_to_switch = 0;             // links to an NVSwitch (HGX boards), which reach every GPU on it
  int version_value = -1;              // nvmlDeviceGetNvLinkVersion of the first active link
};

// NVML bitmasks hold "64 CPUs per unsigned long on 64-bit machines, 32 on 32-bit machines" (nvml.h);
// cpu_list_from_mask takes 64-bit words.
std::vector<uint64_t> to_words(const std::vector<unsigned long>& mask) {
  constexpr size_t kBits = 8 * sizeof(unsigned long);
  std::vector<uint64_t> words((mask.size() * kBits + 63) / 64, 0);
  for (size_t bit = 0; bit < mask.size() * kBits; ++bit) {
    if ((mask[bit / kBits] >> (bit % kBits)) & 1ul) words[bit / 64] |= uint64_t{1} << (bit % 64);
  }
  return words;
}

// The index of the only set bit of an NVML bitmask (unsigned long words); -1 when none or several are set.
int single_bit(const std::vector<unsigned long>& mask) {
  constexpr int kBits = 8 * sizeof(unsigned long);
  int found = -1;
  for (size_t w = 0; w < mask.size(); ++w) {
    for (int b = 0; b < kBits; ++b) {
      if (!((mask[w] >> b) & 1ul)) continue;
      if (found >= 0) return -1;
      found = static_cast<int>(w * kBits + b);
    }
  }
  return found;
}

bool same_pci_device(const std::string& a, const std::string& b) {
  // Normalized ids end in ".<function>"; NVML's remote ids always say function 0.
  return a.size() > 2 && a.size() == b.size() && a.compare(0, a.size() - 2, b, 0, b.size() - 2) == 0;
}

std::string remote_bus_id(const NvmlPciInfo& pci) {
  std::string text(pci.busId, strnlen(pci.busId, sizeof pci.busId));
  std::string id = normalize_bus_id(text);
  if (!id.empty()) return id;
  char fallback[32];
  std::snprintf(fallback, sizeof fallback, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
  return normalize_bus_id(fallback);
}

class NvmlReader {
 public:
  NvmlReader(const NvmlLibrary& library, NodeTopology& node)
      : library_(library), nvml_(library.api()), node_(node) {}

  void read() {
    if (!library_.missing_functions().empty()) note("this NVML lacks " + library_.missing_functions());
    read_driver_version();
    find_handles();
    std::vector<LinkSummary> links(node_.gpus.size());
    for (size_t i = 0; i < node_.gpus.size(); ++i) {
      if (handles_[i] == nullptr) continue;
      read_gpu(node_.gpus[i], handles_[i]);
      links[i] = read_links(i);
    }
    for (GpuPair& pair : node_.pairs) read_pair(pair, links);
    node_.nvml_note = notes_;
  }

 private:
  void note(const std::string& text) { notes_ += (notes_.empty() ? "" : "; ") + text; }

  bool ok(nvmlReturn_t status, const std::string& what) {
    if (status == kNvmlSuccess) return true;
    if (status != kNvmlErrorNotSupported) note(what + ": " + library_.describe(status));
    return false;
  }

  void read_driver_version() {
    if (!nvml_.system_get_driver_version) return;
    char version[kNvmlDriverVersionLength] = {};
    if (ok(nvml_.system_get_driver_version(version, sizeof version), "nvmlSystemGetDriverVersion")) {
      node_.driver_version = std::string(version, strnlen(version, sizeof version));
    }
  }

  void find_handles() {
    handles_.assign(node_.gpus.size(), nullptr);
    if (!nvml_.device_get_handle_by_pci_bus_id_v2) return;
    for (size_t i = 0; i < node_.gpus.size(); ++i) {
      const GpuInfo& gpu = node_.gpus[i];
      if (gpu.bus_id.empty()) continue;
      ok(nvml_.device_get_handle_by_pci_bus_id_v2(gpu.bus_id.c_str(), &handles_[i]),
         "GPU" + std::to_string(gpu.index) + " " + gpu.bus_id + ": no NVML handle");
    }
  }

  void read_gpu(GpuInfo& gpu, nvmlDevice_t handle) {
    const std::string who = "GPU" + std::to_string(gpu.index);
    if (nvml_.device_get_cpu_affinity) {
      std::vector<unsigned long> mask(kAffinityWords, 0);
      if (ok(nvml_.device_get_cpu_affinity(handle, kAffinityWords, mask.data()), who + " cpu affinity")) {
        const std::string list = cpu_list_from_mask(to_words(mask));
        if (!list.empty()) gpu.cpu_affinity = list;
      }
    }
    // The CPU-side NUMA node: sysfs (read first) when the kernel knows it, else NVML's memory affinity
    // when it names exactly one node (what `nvidia-smi topo -m` prints as "NUMA Affinity").
    if (gpu.numa_node < 0 && nvml_.device_get_memory_affinity) {
      std::vector<unsigned long> nodes(kAffinityWords, 0);
      const nvmlReturn_t status =
          nvml_.device_get_memory_affinity(handle, kAffinityWords, nodes.data(), kNvmlAffinityScopeNode);
      if (ok(status, who + " memory affinity")) {
        gpu.numa_node = single_bit(nodes);
      }
    }
    // nvmlDeviceGetNumaNodeId is another fact: the node the GPU's own memory forms on coherent platforms
    // (GH200); discrete GPUs answer NOT_SUPPORTED ("GPU NUMA ID N/A" in nvidia-smi).
    unsigned value = 0;
    if (nvml_.device_get_numa_node_id && nvml_.device_get_numa_node_id(handle, &value) == kNvmlSuccess) {
      gpu.gpu_numa_id = static_cast<int>(value);
    }
    auto read_unsigned = [&](nvmlReturn_t (*function)(nvmlDevice_t, unsigned int*), int& field,
                             const char* what) {
      unsigned result = 0;
      if (function && ok(function(handle, &result), who + " " + what)) field = static_cast<int>(result);
    };
    read_unsigned(nvml_.device_get_curr_pcie_link_generation, gpu.pcie_gen_current, "PCIe generation");
    read_unsigned(nvml_.device_get_curr_pcie_link_width, gpu.pcie_width_current, "PCIe width");
    read_unsigned(nvml_.device_get_max_pcie_link_generation, gpu.pcie_gen_max, "max PCIe generation");
    read_unsigned(nvml_.device_get_max_pcie_link_width, gpu.pcie_width_max, "max PCIe width");
  }

  LinkSummary read_links(size_t i) {
    LinkSummary summary;
    nvmlDevice_t handle = handles_[i];
    if (!nvml_.device_get_nvlink_state || !nvml_.device_get_nvlink_remote_pci_info_v2) return summary;
    for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
      int active = 0;
      const nvmlReturn_t status = nvml_.device_get_nvlink_state(handle, link, &active);
      if (status != kNvmlSuccess) {
        // Past the device's last link (or no NVLink at all): the documented end of the walk.
        if (status != kNvmlErrorInvalidArgument && status != kNvmlErrorNotSupported) {
          note("GPU" + std::to_string(node_.gpus[i].index) + " NVLink " + std::to_string(link) +
               " state: " + library_.describe(status));
        }
        break;
      }
      if (active != kNvmlFeatureEnabled) continue;
      unsigned version = 0;
      if (summary.version_value < 0 && nvml_.device_get_nvlink_version &&
          nvml_.device_get_nvlink_version(handle, link, &version) == kNvmlSuccess) {
        summary.version_value = static_cast<int>(version);
      }
      NvmlPciInfo remote{};
      if (nvml_.device_get_nvlink_remote_pci_info_v2(handle, link, &remote) != kNvmlSuccess) continue;
      const std::string remote_id = remote_bus_id(remote);
      bool to_visible_gpu = false;
      for (size_t j = 0; j < node_.gpus.size(); ++j) {
        if (j != i && same_pci_device(node_.gpus[j].bus_id, remote_id)) {
          ++summary.links_to_gpu[j];
          to_visible_gpu = true;
          break;
        }
      }
      if (!to_visible_gpu && remote_is_switch(handle, link, remote_id)) ++summary.links_to_switch;
    }
    return summary;
  }

  // A link that does not end on a GPU of this process ends on an NVSwitch, or on a GPU hidden by
  // CUDA_VISIBLE_DEVICES (which NVML still sees), or on a CPU (POWER9).
  bool remote_is_switch(nvmlDevice_t handle, unsigned link, const std::string& remote_id) {
    int type = -1;
    if (nvml_.device_get_nvlink_remote_device_type &&
        nvml_.device_get_nvlink_remote_device_type(handle, link, &type) == kNvmlSuccess) {
      return type == kNvmlNvLinkDeviceTypeSwitch;
    }
    nvmlDevice_t other = nullptr;
    if (nvml_.device_get_handle_by_pci_bus_id_v2 && !remote_id.empty() &&
        nvml_.device_get_handle_by_pci_bus_id_v2(remote_id.c_str(), &other) == kNvmlSuccess) {
      return false;  // an NVML GPU this process cannot see
    }
    return true;
  }

  void read_pair(GpuPair& pair, const std::vector<LinkSummary>& links) {
    const size_t a = index_of(pair.gpu_a), b = index_of(pair.gpu_b);
    if (a >= handles_.size() || b >= handles_.size() || !handles_[a] || !handles_[b]) return;
    const std::string who = "GPU" + std::to_string(pair.gpu_a) + "-GPU" + std::to_string(pair.gpu_b);

    auto direct = links[a].links_to_gpu.find(b);
    int count = direct == links[a].links_to_gpu.end() ? 0 : direct->second;
    count += std::min(links[a].links_to_switch, links[b].links_to_switch);
    pair.nvlink_count = count;
    if (count > 0) {
      const std::string by_arch = nvlink_version_for_compute_capability(node_.gpus[a].compute_capability);
      const std::string by_nvml =
          links[a].version_value >= 0 ? nvlink_version_from_nvml(links[a].version_value) : "";
      if (!by_arch.empty() && !by_nvml.empty() && by_arch != by_nvml) {
        note(who + ": NVML reports NVLink version value " + std::to_string(links[a].version_value) + " (" +
             by_nvml + "), sm_" + std::to_string(node_.gpus[a].compute_capability) + " has NVLink " +
             by_arch + "; using " + by_arch);
      }
      pair.nvlink_version = by_arch.empty() ? by_nvml : by_arch;
      pair.nvlink_link_gbps = nvlink_link_gbps(pair.nvlink_version);
    }

    int level = -1;
    if (nvml_.device_get_topology_common_ancestor &&
        ok(nvml_.device_get_topology_common_ancestor(handles_[a], handles_[b], &level), who + " path")) {
      pair.pcie_path = pcie_path_from_nvml_level(level);
    }
    pair.path_type = pair_label(pair.nvlink_count, pair.pcie_path);

    if (nvml_.device_get_p2p_status) {
      int status = -1;
      nvmlReturn_t result = nvml_.device_get_p2p_status(handles_[a], handles_[b], kNvmlP2PCapsRead, &status);
      if (ok(result, who + " P2P read")) {
        pair.p2p_read_status = p2p_status_code(status);
        pair.p2p_read = status == 0;
      }
      result = nvml_.device_get_p2p_status(handles_[a], handles_[b], kNvmlP2PCapsWrite, &status);
      if (ok(result, who + " P2P write")) {
        pair.p2p_write_status = p2p_status_code(status);
        pair.p2p_write = status == 0;
      }
    }
  }

  size_t index_of(int cuda_index) const {
    for (size_t i = 0; i < node_.gpus.size(); ++i) {
      if (node_.gpus[i].index == cuda_index) return i;
    }
    return node_.gpus.size();
  }

  const NvmlLibrary& library_;
  const NvmlFunctions& nvml_;
  NodeTopology& node_;
  std::vector<nvmlDevice_t> handles_;
  std::string notes_;
};

}  // namespace

void add_nvml_facts(NodeTopology& node) {
  std::string why_not;
  std::unique_ptr<NvmlLibrary> library = NvmlLibrary::open(&why_not);
  node.nvml_available = library != nullptr;
  if (!library) {
    node.nvml_note = why_not;
    return;
  }
  NvmlReader(*library, node).read();
}

}  // namespace detail
}  // namespace sb
