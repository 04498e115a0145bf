// Without NCCL the backend is absent: asking for it is a usage error that says how to get it.
#include "collectives/backends.h"
#include "scalebench/error.h"

namespace sb {

bool nccl_built_in() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(ProcessGroup&, Device&, const CommunicatorOptions&) {
  throw UsageError("the nccl backend needs scalebench built with NCCL (set NCCL_HOME, or -DSB_REQUIRE_NCCL=ON)");
}

}  // namespace sb
