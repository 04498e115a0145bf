// The CPU executor's kernels for the SAN answer-module ops (cpu_kernels_san.cpp), looked up by
// src/engine/cpu_executor.cpp after its core table.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "scalebench/executor.h"

namespace sb::detail {

using CpuKernel = std::function<void(CpuExecutor&, const Node&)>;
// One family's kernels by op name; cpu_executor.cpp walks the families' tables in a fixed order.
using CpuKernelTable = std::map<std::string, CpuKernel>;

const CpuKernelTable& san_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
