// CPU frozen affine normalisation (src/cpu/frozen_affine.h).
#include "src/cpu/frozen_affine.h"

namespace sb::cpu {

void frozen_affine_forward(const float* x, const float* scale, const float* shift, float* y, int64_t rows,
                           int64_t channels, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const float v = x[r * channels + c] * scale[c] + shift[c];
      y[r * channels + c] = relu && !(v > 0.0f) ? 0.0f : v;
    }
  }
}

void frozen_affine_backward(const float* dy, const float* y, const float* scale, float* dx, int64_t rows,
                            int64_t channels, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      dx[i] = relu && !(y[i] > 0.0f) ? 0.0f : dy[i] * scale[c];
    }
  }
}

}  // namespace sb::cpu
