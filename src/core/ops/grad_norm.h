// The deterministic sum of squares both the optimizer (clipping, the fp16 overflow test) and StyleGAN's
// squared_norm_loss run on the CUDA device: a fixed grid of partials in double, then one final sum. Its scratch
// size is shared by the graph builder (squared_norm_loss's workspace) and the kernels.
#pragma once

#include <cstdint>

namespace sb {

// Doubles the `grad_norm_squared` scratch holds: [0] the result, then one partial per CUDA block.
constexpr int64_t kGradNormBlocks = 1024;
constexpr int64_t kGradNormScratchDoubles = 1 + kGradNormBlocks;

}  // namespace sb
