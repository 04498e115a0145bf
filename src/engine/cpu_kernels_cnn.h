// The CPU executor's kernels for the convolutional-network ops (cpu_kernels_cnn.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table and the SAN ops.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernel* find_cnn_cpu_kernel(const std::string& op);  // nullptr for any other op

}  // namespace sb::detail
