// The mean of a summed loss over the rows that counted, written on the device (the loss tensor of the
// graph), so the host reads it only when it wants to.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

void loss_mean(const float* loss_sum, const int64_t* counted_rows, float* loss, cudaStream_t stream);

}  // namespace sb::cuda
