// SB_MPI_CHECK: an MPI call that must succeed; on failure the fatal path names the call and MPI's text.
// MPI_COMM_WORLD uses MPI_ERRORS_RETURN (set at start) so failures reach this check.
#pragma once

#include <string>

#include "scalebench/error.h"

namespace sb::detail {
std::string mpi_error_text(int code);
}

#define SB_MPI_CHECK(call) \
  SB_CHECK_STATUS(call, [](int sb_code) { return sb_code == MPI_SUCCESS; }, ::sb::detail::mpi_error_text)
