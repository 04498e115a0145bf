// Opens NVML with dlopen and resolves the functions of nvml_loader.h by name. The library comes with the
// NVIDIA driver (libnvidia-ml.so.1), not with the toolkit, so a build machine without a GPU has none and
// a container started without the "utility" driver capability may lack it too: both are normal here.
#include "src/topo/nvml_loader.h"

#include <dlfcn.h>

namespace sb {
namespace detail {
namespace {

constexpr const char* kNvmlLibraryName = "libnvidia-ml.so.1";

template <typename Function>
void resolve(void* handle, const char* name, Function& slot, std::string& missing) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  slot = reinterpret_cast<Function>(dlsym(handle, name));
  if (slot == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += name;
  }
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(std::string* why_not) {
  void* handle = dlopen(kNvmlLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    if (why_not)
      *why_not = std::string("cannot load ") + kNvmlLibraryName + (error ? std::string(": ") + error : "");
    return nullptr;
  }
  std::unique_ptr<NvmlLibrary> library(new NvmlLibrary());
  library->handle_ = handle;

  nvmlReturn_t (*init)() = nullptr;
  std::string ignored;
  resolve(handle, "nvmlInit_v2", init, ignored);
  resolve(handle, "nvmlShutdown", library->shutdown_, ignored);
  NvmlFunctions& api = library->api_;
  resolve(handle, "nvmlErrorString", api.error_string, ignored);
  if (init == nullptr) {
    if (why_not) *why_not = std::string(kNvmlLibraryName) + " has no nvmlInit_v2";
    library->shutdown_ = nullptr;  // nothing was initialised, so nothing to shut down
    return nullptr;
  }
  const nvmlReturn_t status = init();
  if (status != kNvmlSuccess) {
    if (why_not) *why_not = "nvmlInit_v2 failed: " + library->describe(status);
    library->shutdown_ = nullptr;
    return nullptr;
  }

  std::string& missing = library->missing_;
  resolve(handle, "nvmlSystemGetDriverVersion", api.system_get_driver_version, missing);
  resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", api.device_get_handle_by_pci_bus_id_v2, missing);
  resolve(handle, "nvmlDeviceGetNumaNodeId", api.device_get_numa_node_id, missing);
  resolve(handle, "nvmlDeviceGetCpuAffinity", api.device_get_cpu_affinity, missing);
  resolve(handle, "nvmlDeviceGetMemoryAffinity", api.device_get_memory_affinity, missing);
  resolve(handle, "nvmlDeviceGetNvLinkState", api.device_get_nvlink_state, missing);
  resolve(handle, "nvmlDeviceGetNvLinkVersion", api.device_get_nvlink_version, missing);
  resolve(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.device_get_nvlink_remote_pci_info_v2, missing);
  resolve(handle, "nvmlDeviceGetNvLinkRemoteDeviceType", api.device_get_nvlink_remote_device_type, missing);
  resolve(handle, "nvmlDeviceGetTopologyCommonAncestor", api.device_get_topology_common_ancestor, missing);
  resolve(handle, "nvmlDeviceGetP2PStatus", api.device_get_p2p_status, missing);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", api.device_get_curr_pcie_link_generation, missing);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", api.device_get_curr_pcie_link_width, missing);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", api.device_get_max_pcie_link_generation, missing);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", api.device_get_max_pcie_link_width, missing);
  return library;
}

NvmlLibrary::~NvmlLibrary() {
  if (shutdown_ != nullptr) shutdown_();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::describe(nvmlReturn_t result) const {
  std::string text = "NVML error " + std::to_string(result);
  if (api_.error_string != nullptr) {
    const char* name = api_.error_string(result);
    if (name != nullptr) text += std::string(" (") + name + ")";
  }
  return text;
}

}  // namespace detail
}  // namespace sb
