// The CPU executor's kernels for the ConvS2S ops (cpu_kernels_convs2s.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table, the SAN and the convolutional-network ops.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& convs2s_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
