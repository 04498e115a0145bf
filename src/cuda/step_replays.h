// The replay counter of a captured training step (src/cuda/step_value.h): the graph's last node adds one.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::cuda {

// Enqueues *counter += 1 on `stream` (one thread); returns the launch's status instead of throwing, so that a
// capture in progress can still be ended cleanly.
cudaError_t advance_replays(int64_t* counter, cudaStream_t stream);

}  // namespace sb::cuda
