// loss = loss_sum / counted_rows on the device (src/cuda/loss_mean.h); one thread.
#include "src/cuda/cuda_check.h"
#include "src/cuda/loss_mean.h"

namespace sb::cuda {
namespace {

__global__ void loss_mean_kernel(const float* loss_sum, const int64_t* counted_rows, float* loss) {
  *loss = *counted_rows > 0 ? *loss_sum / static_cast<float>(*counted_rows) : 0.0f;
}

}  // namespace

void loss_mean(const float* loss_sum, const int64_t* counted_rows, float* loss, cudaStream_t stream) {
  loss_mean_kernel<<<1, 1, 0, stream>>>(loss_sum, counted_rows, loss);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
