// Launchers of the verification kernels (pattern.h formulas on the GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "scalebench/dtype.h"
#include "scalebench/pattern.h"

namespace sb::cuda {

void fill_pattern(void* buffer, size_t count, DType type, const PatternSpec& spec, cudaStream_t stream);

// Adds the number of elements that differ from the pattern to *device_counter (one uint64 on the device).
void count_mismatches(const void* buffer, size_t count, DType type, const PatternSpec& spec,
                      double relative_tolerance, unsigned long long* device_counter, cudaStream_t stream);

}  // namespace sb::cuda
