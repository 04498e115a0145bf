// The CPU executor's kernels for the GAN ops added for pix2pixHD (cpu_kernels_pix2pixhd.cpp), looked up by
// src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& pix2pixhd_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
