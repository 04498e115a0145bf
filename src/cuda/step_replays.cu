// The replay counter's advance (src/cuda/step_replays.h).
#include "src/cuda/step_replays.h"

namespace sb::cuda {
namespace {

__global__ void advance_replays_kernel(int64_t* counter) { *counter += 1; }

}  // namespace

cudaError_t advance_replays(int64_t* counter, cudaStream_t stream) {
  advance_replays_kernel<<<1, 1, 0, stream>>>(counter);
  return cudaGetLastError();
}

}  // namespace sb::cuda
