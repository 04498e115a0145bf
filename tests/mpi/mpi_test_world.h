// The world process group of the mpi test binary: tests/mpi/main.cpp starts it before any test runs and
// finalizes it after the last, so tests may use it (and build communicators on it) freely.
#pragma once

#include "scalebench/process_group.h"

namespace sb::test {

ProcessGroup& world();

}  // namespace sb::test
