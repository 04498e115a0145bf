// Waiting for a non-blocking MPI operation with a deadline. A blocking MPI call cannot be abandoned when a
// peer never arrives; a request polled with MPI_Test can. Used by the MPI process group (host collectives)
// and the mpi communicator (data collectives on the CPU device). Included only by *_mpi.cpp files.
#pragma once

#include <mpi.h>

#include <string>

#include "scalebench/process_group.h"

namespace sb::detail {

// Polls `request` until it completes. Past `timeout_seconds`, or on an MPI error (a peer's connection
// broke), holds the roll call and throws CommunicationFault naming the phase, step, `what` and the silent
// ranks. Once a stop signal has arrived, the operation gets stop_grace_seconds more, then the same fault.
// After a fault the buffers of `request` may still be written by MPI: the job must end without MPI calls
// other than the roll call's (fault.h: communication_abandoned).
void wait_for_request(MPI_Request* request, const std::string& what, double timeout_seconds, ProcessGroup& group);

}  // namespace sb::detail
