// NVML opened at run time: the few types and functions `scalebench topo` needs, declared here from the
// published nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h, NVML 12.2 header) so that nothing NVML-related is
// needed to build. This is the pattern NCCL uses (src/include/nvmlwrap.h, "Extracted from nvml.h").
// Each function is looked up by name; a missing one is a null pointer and only its fact goes unknown.
#pragma once

#include <memory>
#include <string>

namespace sb {
namespace detail {

// ---- vendored declarations (layouts and values as in nvml.h)
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

// nvmlPciInfo_t as filled by the *_v2/_v3 functions (nvmlDeviceGetNvLinkRemotePciInfo_v2): the legacy
// 16-byte id first, the 32-byte "%08X:%02X:%02X.0" id last. (The v1 layout put a 32-byte busId first and
// four reserved words last; both are 68 bytes, so a mix-up misreads but never overruns.)
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t is 68 bytes in nvml.h");

constexpr int kNvmlFeatureEnabled = 1;     // nvmlEnableState_t
constexpr int kNvmlAffinityScopeNode = 0;  // nvmlAffinityScope_t
constexpr int kNvmlP2PCapsRead = 0;        // nvmlGpuP2PCapsIndex_t
constexpr int kNvmlP2PCapsWrite = 1;
constexpr int kNvmlNvLinkDeviceTypeGpu = 0;  // nvmlIntNvLinkDeviceType_t
constexpr int kNvmlNvLinkDeviceTypeSwitch = 2;
// NVML_NVLINK_MAX_LINKS is 18 in the 12.x header and 36 in 13.x; links past a device's count answer
// INVALID_ARGUMENT or NOT_SUPPORTED (GB200 answers INVALID_ARGUMENT from 18), which ends the walk.
constexpr unsigned kNvmlMaxLinks = 36;
constexpr unsigned kNvmlDriverVersionLength = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// The entry points, snake_case after their NVML names (device_get_nvlink_state = nvmlDeviceGetNvLinkState).
// Enums are passed as int: every NVML enum used here is int-sized.
struct NvmlFunctions {
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*system_get_driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*device_get_handle_by_pci_bus_id_v2)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*device_get_numa_node_id)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_cpu_affinity)(nvmlDevice_t, unsigned int, unsigned long*) = nullptr;
  nvmlReturn_t (*device_get_memory_affinity)(nvmlDevice_t, unsigned int, unsigned long*, int) = nullptr;
  nvmlReturn_t (*device_get_nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*device_get_nvlink_version)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_nvlink_remote_pci_info_v2)(nvmlDevice_t, unsigned int, NvmlPciInfo*) = nullptr;
  nvmlReturn_t (*device_get_nvlink_remote_device_type)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*device_get_topology_common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*device_get_p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_width)(nvmlDevice_t, unsigned int*) = nullptr;
};

// The opened and initialised library.
class NvmlLibrary {
 public:
  // dlopen("libnvidia-ml.so.1") and nvmlInit_v2(). Returns null and says why in `why_not` when the
  // library, nvmlInit_v2 or the initialisation fails.
  static std::unique_ptr<NvmlLibrary> open(std::string* why_not);
  ~NvmlLibrary();  // nvmlShutdown(), dlclose()
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& api() const { return api_; }
  // "nvmlDeviceGetNumaNodeId, ...": the functions this driver's NVML lacks; "" when none.
  const std::string& missing_functions() const { return missing_; }
  std::string describe(nvmlReturn_t result) const;  // "NVML error 3 (Not Supported)"

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  NvmlFunctions api_;
  std::string missing_;
};

}  // namespace detail
}  // namespace sb
