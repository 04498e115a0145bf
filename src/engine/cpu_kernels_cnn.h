// The CPU executor's kernels for the convolutional-network ops (cpu_kernels_cnn.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table and the SAN ops.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& cnn_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
