// The CUDA half of topology discovery when scalebench is built without CUDA: no GPUs, and the node says
// why. NVML and sysfs facts still need GPUs from here, so they stay empty too; network adapters remain.
#include "src/topo/topology_detail.h"

namespace sb {
namespace detail {

void add_cuda_facts(NodeTopology& node) { node.cuda_note = "no CUDA device visible (built without CUDA)"; }

}  // namespace detail
}  // namespace sb
