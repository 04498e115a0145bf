// The scratch of the mean losses over whole tensors (mse_loss, l1_loss) on the CUDA device
// (src/cuda/pixel_losses.cu): a fixed grid of blocks each writes one double partial sum, and one block adds the
// partials in a fixed order, so the loss is the same bits on every run and any GPU.
#pragma once

#include <cstdint>

namespace sb {

constexpr int64_t kPixelLossBlocks = 1024;

inline int64_t pixel_loss_workspace_bytes(int64_t /*elements*/) { return kPixelLossBlocks * int64_t(sizeof(double)); }

}  // namespace sb
