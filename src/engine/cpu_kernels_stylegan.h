// The CPU executor's kernels for StyleGAN's ops (cpu_kernels_stylegan.cpp), looked up by
// src/engine/cpu_executor.cpp after the other op families.
#pragma once

#include <string>

#include "src/engine/cpu_kernels_san.h"

namespace sb::detail {

const CpuKernel* find_stylegan_cpu_kernel(const std::string& op);  // nullptr for any other op

}  // namespace sb::detail
