// SB_CUBLAS_CHECK: a cuBLAS/cuBLASLt call that must return CUBLAS_STATUS_SUCCESS; failures go to the one
// fatal path (STYLE.md rule 6) with the status name and text, as SB_CUDA_CHECK does for the runtime.
#pragma once

#include <cublasLt.h>

#include <string>

#include "scalebench/error.h"

namespace sb::detail {
inline std::string cublas_status_text(cublasStatus_t status) {
  return std::string(cublasLtGetStatusName(status)) + ": " + cublasLtGetStatusString(status);
}
}  // namespace sb::detail

#define SB_CUBLAS_CHECK(call)                                                                            \
  SB_CHECK_STATUS(call, [](cublasStatus_t sb_code) { return sb_code == CUBLAS_STATUS_SUCCESS; }, \
                  ::sb::detail::cublas_status_text)
