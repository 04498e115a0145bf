// Factories of the Communicator backends (include/scalebench/communicator.h). Each is defined in a file
// that builds only with its library (*_mpi.cpp, *_nccl.cpp); the *_without_<lib>.cpp twin throws
// UsageError, so callers never need #ifdefs. make_communicator() chooses among them.
#pragma once

#include <memory>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/process_group.h"

namespace sb {

// Whether this build has the NCCL backend (a usage error names a missing build before any device check).
bool nccl_built_in();

// Collectives through NCCL on the CUDA device; ranks agree on the unique id through `group`.
std::unique_ptr<Communicator> make_nccl_communicator(ProcessGroup& group, Device& device,
                                                     const CommunicatorOptions& options);

// Collectives through MPI on the ranks of `group` (the world, or a split of it). Device memory that the host cannot
// address is staged through host buffers.
std::unique_ptr<Communicator> make_mpi_communicator(ProcessGroup& group, Device& device,
                                                    const CommunicatorOptions& options);

// One rank: every collective is a device-side copy (or nothing, in place).
std::unique_ptr<Communicator> make_local_communicator(Device& device);

}  // namespace sb
