// The MPI communicator behind a ProcessGroup, for the mpi backend's data collectives (collectives/), which must
// span exactly the group's ranks: the world's, or a --gpus-sweep team's. Included only by *_mpi.cpp files.
#pragma once

#include <mpi.h>

#include "scalebench/process_group.h"

namespace sb::detail {

// `group` must be the MPI process group (start_process_group) or one split from it; anything else is a
// programming error (fatal).
MPI_Comm mpi_comm_of(const ProcessGroup& group);

}  // namespace sb::detail
