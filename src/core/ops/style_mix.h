// The style-mix family (style_mix, its backward; src/core/ops/style_mix.cpp): StyleGAN's mixing regularisation,
// w (2N, D) -> one (N, D) dlatent per synthesis layer, each sample's first or second w by its crossover layer.
// Kernels: src/cpu/style_mix.cpp, src/cuda/stylegan_g_ops.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct StyleMixParams {
  int64_t layers = 0, batch = 0, dim = 0;  // outputs, N, D
};
NodeAttributes encode(const StyleMixParams& params);
StyleMixParams style_mix_params(const Node& node);  // of both ops

}  // namespace sb
