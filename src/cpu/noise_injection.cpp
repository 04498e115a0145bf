// Noise inputs on the CPU (src/cpu/noise_injection.h).
#include "src/cpu/noise_injection.h"

#include <vector>

namespace sb::cpu {

void noise_injection_forward(const float* x, const float* weight, const int32_t* sample_ids, float* y, int64_t batch,
                             int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset) {
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < pixels; ++p) {
      const float noise = noise_value(seed, offset, static_cast<uint32_t>(sample_ids[n]), p);
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) y[row + c] = x[row + c] + weight[c] * noise;
    }
  }
}

void noise_injection_backward(const float* dy, const int32_t* sample_ids, float* dweight, int64_t batch,
                              int64_t pixels, int64_t channels, uint64_t seed, uint64_t offset) {
  std::vector<double> sums(static_cast<size_t>(channels), 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < pixels; ++p) {
      const double noise = noise_value(seed, offset, static_cast<uint32_t>(sample_ids[n]), p);
      const int64_t row = (n * pixels + p) * channels;
      for (int64_t c = 0; c < channels; ++c) sums[size_t(c)] += dy[row + c] * noise;
    }
  }
  for (int64_t c = 0; c < channels; ++c) dweight[c] = static_cast<float>(sums[size_t(c)]);
}

}  // namespace sb::cpu
