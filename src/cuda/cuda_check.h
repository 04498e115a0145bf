// SB_CUDA_CHECK: a CUDA runtime call that must succeed; failures go to the one fatal path (STYLE.md rule 6).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "scalebench/error.h"

namespace sb::detail {
inline std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}
}  // namespace sb::detail

#define SB_CUDA_CHECK(call) \
  SB_CHECK_STATUS(call, [](cudaError_t sb_code) { return sb_code == cudaSuccess; }, ::sb::detail::cuda_error_text)

// After a kernel launch: launch-configuration errors surface here, not at the next synchronisation.
#define SB_CUDA_CHECK_LAUNCH() SB_CUDA_CHECK(cudaGetLastError())
