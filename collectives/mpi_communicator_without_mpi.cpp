// The mpi backend when scalebench is built without MPI: asking for it is a usage error (STYLE.md rule 18).
#include "collectives/backends.h"
#include "scalebench/error.h"

namespace sb {

std::unique_ptr<Communicator> make_mpi_communicator(ProcessGroup&, Device&, const CommunicatorOptions&) {
  throw UsageError("the mpi backend needs scalebench built with MPI (Debian: libopenmpi-dev)");
}

}  // namespace sb
