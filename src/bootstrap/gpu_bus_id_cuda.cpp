// The PCI bus id of a visible GPU, read before any device is opened, so that ranks can find out they would
// share a GPU before the first allocation (include/scalebench/launch.h).
#include <cuda_runtime.h>

#include "scalebench/launch.h"

namespace sb {

std::string gpu_bus_id(int ordinal) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return bus_id;
}

}  // namespace sb
