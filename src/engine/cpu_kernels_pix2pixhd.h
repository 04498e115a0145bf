// The CPU executor's kernels for the GAN ops added for pix2pixHD (cpu_kernels_pix2pixhd.cpp), looked up by
// src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernel* find_pix2pixhd_cpu_kernel(const std::string& op);  // nullptr for any other op

}  // namespace sb::detail
