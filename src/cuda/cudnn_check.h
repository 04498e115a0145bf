// SB_CUDNN_CHECK: a cuDNN call that must return CUDNN_STATUS_SUCCESS; failures go to the one fatal path
// (STYLE.md rule 6) with the status name, as SB_CUDA_CHECK does for the runtime. Built only with cuDNN.
#pragma once

#include <cudnn.h>

#include <string>

#include "scalebench/error.h"

namespace sb::detail {
inline std::string cudnn_status_text(cudnnStatus_t status) { return cudnnGetErrorString(status); }
}  // namespace sb::detail

#define SB_CUDNN_CHECK(call) \
  SB_CHECK_STATUS(call, [](cudnnStatus_t sb_code) { return sb_code == CUDNN_STATUS_SUCCESS; }, \
                  ::sb::detail::cudnn_status_text)
