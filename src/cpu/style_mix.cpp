// Style mixing on the CPU (src/cpu/style_mix.h).
#include "src/cpu/style_mix.h"

#include <cstring>

namespace sb::cpu {

void style_mix_forward(const float* w, const int32_t* crossover, float* const* layers, int64_t num_layers,
                       int64_t batch, int64_t dim) {
  for (int64_t l = 0; l < num_layers; ++l) {
    for (int64_t n = 0; n < batch; ++n) {
      const float* source = w + (crossover[n] > l ? n : batch + n) * dim;
      std::memcpy(layers[l] + n * dim, source, sizeof(float) * size_t(dim));
    }
  }
}

void style_mix_backward(const float* const* dlayers, const int32_t* crossover, float* dw, int64_t num_layers,
                        int64_t batch, int64_t dim) {
  std::memset(dw, 0, sizeof(float) * size_t(2 * batch * dim));
  for (int64_t l = 0; l < num_layers; ++l) {
    for (int64_t n = 0; n < batch; ++n) {
      float* target = dw + (crossover[n] > l ? n : batch + n) * dim;
      for (int64_t d = 0; d < dim; ++d) target[d] += dlayers[l][n * dim + d];
    }
  }
}

}  // namespace sb::cpu
