// The CPU executor's kernels for the greedy-decoding ops and the device copy (cpu_kernels_decode.cpp), looked
// up by src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& decode_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
