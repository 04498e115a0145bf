// Versions of the libraries a result depends on, for the context block of every report.
#pragma once

#include <string>

namespace sb {

std::string cuda_runtime_version();  // "13.0"; empty when built without CUDA
std::string cuda_driver_version();   // the CUDA version the driver supports; empty without a driver
std::string cublas_version();        // cuBLASLt's, "13.0.0"; empty when built without CUDA
std::string scalebench_version();
std::string scalebench_git_commit();  // 12 hex digits, "-dirty" with local changes; "unknown" outside git

}  // namespace sb
