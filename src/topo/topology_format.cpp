// Pure conversions behind `scalebench topo`: CPU masks to lists, NVML enums to the codes nvidia-smi
// prints, NVLink versions and their per-link rates, PCIe link speeds and bus ids. Each one has a unit test
// (tests/unit/test_topology_format.cpp), since none of the GPU paths run in CI.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

#include "src/topo/topology_detail.h"

namespace sb {
namespace detail {

std::string cpu_list_from_mask(const std::vector<uint64_t>& words) {
  constexpr int kBitsPerWord = 64;
  std::string list;
  int run_start = -1;
  const int total = static_cast<int>(words.size()) * kBitsPerWord;
  auto close_run = [&](int end) {  // end is one past the last CPU of the run
    if (!list.empty()) list += ',';
    list += std::to_string(run_start);
    if (end - 1 > run_start) list += '-' + std::to_string(end - 1);
    run_start = -1;
  };
  for (int cpu = 0; cpu < total; ++cpu) {
    const bool set = (words[cpu / kBitsPerWord] >> (cpu % kBitsPerWord)) & 1u;
    if (set && run_start < 0) run_start = cpu;
    if (!set && run_start >= 0) close_run(cpu);
  }
  if (run_start >= 0) close_run(total);
  return list;
}

std::string pcie_path_from_nvml_level(int level) {
  // nvmlGpuTopologyLevel_t (nvml.h): INTERNAL 0 (two GPUs on one board, joined by the board's own PCIe
  // switch, so "at most a single bridge"), SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50.
  switch (level) {
    case 0:
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    case 50: return "SYS";
    default: return "";
  }
}

std::string pair_label(int nvlink_count, const std::string& pcie_path) {
  if (nvlink_count > 0) return "NV" + std::to_string(nvlink_count);
  return pcie_path;
}

std::string nvlink_version_from_nvml(unsigned value) {
  // nvmlNvlinkVersion_t: the NVML documentation fixed in 2025 says the value is this enum, and drivers
  // return it (an A100 reports 5, see open-mpi/hwloc#658), so 4 means NVLink 3.0, not 4.0.
  static const char* const kVersions[] = {"", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0", "6.0"};
  if (value >= sizeof(kVersions) / sizeof(kVersions[0])) return "";
  return kVersions[value];
}

std::string nvlink_version_for_compute_capability(int compute_capability) {
  // The generation a GPU architecture carries: P100 1.0, V100 2.0, Turing 2.2, A100 3.0, GA102 (RTX
  // 3090, A6000) 3.1, Hopper (H100/H200/H20/GH200) 4.0, Blackwell B200/B300 5.0. Preferred over NVML's
  // value, which drivers have filled inconsistently (a Hopper reported as 5.0 has been seen in the wild).
  switch (compute_capability) {
    case 60: return "1.0";
    case 70: return "2.0";
    case 75: return "2.2";
    case 80: return "3.0";
    case 86: return "3.1";
    case 90: return "4.0";
    case 100:
    case 103: return "5.0";
    default: return "";
  }
}

double nvlink_link_gbps(const std::string& version) {
  // Raw per-link, per-direction signalling rate as `nvidia-smi nvlink -s` prints it (it overshoots the
  // marketing number: 18 x 26.5625 = 478 GB/s against 450 for H100, ml-engineering network/README.md):
  //   2.0 / 2.2: "Link 0: 25.781 GB/s" on V100 (DGX-1) and Quadro RTX 8000;
  //   4.0:       "Link 0: 26.562 GB/s" on H100, H100 PCIe and H20;
  //   5.0:       "Link 0: 53.125 GB/s" on B300.
  // 1.0 and 3.x are left unknown: their spec rates (20 GB/s; 25 GB/s on A100, 14.0625 GB/s on GA102)
  // are not what nvidia-smi reports, and 3.0/3.1 do not tell A100 and GA102 links apart.
  if (version == "2.0" || version == "2.2") return 25.78125;
  if (version == "4.0") return 26.5625;
  if (version == "5.0") return 53.125;
  return 0;
}

int pcie_gen_from_link_speed(const std::string& speed) {
  // Per-lane signalling rate of each PCIe generation: 2.5, 5, 8, 16, 32, 64 GT/s.
  const double gt_per_s = std::strtod(speed.c_str(), nullptr);
  static const double kRates[] = {2.5, 5, 8, 16, 32, 64};
  for (int gen = 1; gen <= 6; ++gen) {
    if (gt_per_s > kRates[gen - 1] * 0.9 && gt_per_s < kRates[gen - 1] * 1.1) return gen;
  }
  return 0;
}

std::string normalize_bus_id(const std::string& bus_id) {
  // [domain:]bus:device.function, hexadecimal; NVML writes an 8-digit domain, CUDA and sysfs 4 digits.
  static const std::regex kPattern(
      "^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\\.([0-7])$");
  std::smatch match;
  if (!std::regex_match(bus_id, match, kPattern)) return "";
  const unsigned long domain = match[1].matched ? std::stoul(match[1].str(), nullptr, 16) : 0;
  const unsigned long device = std::stoul(match[3].str(), nullptr, 16);
  if (device > 0x1f) return "";
  char out[32];
  std::snprintf(out, sizeof out, "%04lx:%02lx:%02lx.%s", domain, std::stoul(match[2].str(), nullptr, 16),
                device, match[4].str().c_str());
  return out;
}

std::string p2p_status_code(int status) {
  // nvmlGpuP2PStatus_t: OK 0, CHIPSET_NOT_SUPPORTED 1, GPU_NOT_SUPPORTED 2, IOH_TOPOLOGY_NOT_SUPPORTED 3,
  // DISABLED_BY_REGKEY 4, NOT_SUPPORTED 5, UNKNOWN 6; codes as the `nvidia-smi topo -p2p` legend.
  switch (status) {
    case 0: return "OK";
    case 1: return "CNS";
    case 2: return "GNS";
    case 3: return "TNS";
    case 4: return "DISABLED";
    case 5: return "NS";
    default: return "U";
  }
}

}  // namespace detail
}  // namespace sb
