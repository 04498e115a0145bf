// Without CUDA there is no GPU to share (include/scalebench/launch.h).
#include "scalebench/launch.h"

namespace sb {

std::string gpu_bus_id(int) { return ""; }

}  // namespace sb
