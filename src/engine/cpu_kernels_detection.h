// The CPU executor's kernels for Mask R-CNN's ops (cpu_kernels_detection.cpp), looked up by
// src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& detection_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
