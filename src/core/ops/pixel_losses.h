// The pixel-losses family (mse_loss, l1_loss and their backward ops; src/core/ops/pixel_losses.cpp): the mean
// losses over whole tensors. Their nodes carry one or two attributes ("n", mse's "target"), so no params struct.
// The scratch on the CUDA device (src/cuda/pixel_losses.cu): a fixed grid of blocks each writes one double
// partial sum, and one block adds the partials in a fixed order, so the loss is the same bits on every run and
// any GPU.
#pragma once

#include <cstdint>

namespace sb {

constexpr int64_t kPixelLossBlocks = 1024;

inline int64_t pixel_loss_workspace_bytes(int64_t /*elements*/) { return kPixelLossBlocks * int64_t(sizeof(double)); }

}  // namespace sb
