// Stand-ins for the CUDA device when scalebench is built without the CUDA toolkit: asking for it is a
// usage error, and the program reports zero GPUs.
#include "scalebench/device.h"
#include "scalebench/error.h"
#include "scalebench/versions.h"

namespace sb {

std::unique_ptr<Device> make_cuda_device(int) {
  throw UsageError("the cuda device needs scalebench built with the CUDA toolkit");
}
int visible_cuda_device_count() { return 0; }
std::string cuda_runtime_version() { return ""; }
std::string cuda_driver_version() { return ""; }
std::string cublas_version() { return ""; }

}  // namespace sb
