// The CPU executor's kernels for the SAN answer-module ops (cpu_kernels_san.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table.
#pragma once

#include <functional>
#include <string>

#include "scalebench/executor.h"

namespace sb::detail {

using CpuKernel = std::function<void(CpuExecutor&, const Node&)>;

const CpuKernel* find_san_cpu_kernel(const std::string& op);  // nullptr for any other op

}  // namespace sb::detail
