// The CPU executor's kernels for the ConvS2S ops (cpu_kernels_convs2s.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table, the SAN and the convolutional-network ops.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernel* find_convs2s_cpu_kernel(const std::string& op);  // nullptr for any other op

}  // namespace sb::detail
