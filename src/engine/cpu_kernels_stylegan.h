// The CPU executor's kernels for StyleGAN's ops (cpu_kernels_stylegan.cpp), looked up by
// src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernelTable& stylegan_cpu_kernels();  // op name -> kernel

}  // namespace sb::detail
