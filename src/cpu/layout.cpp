// Broadcast add and middle-dimension swap (src/cpu/layout.h).
#include "src/cpu/layout.h"

#include <cstring>

namespace sb::cpu {

void add_broadcast_forward(const float* x, const float* table, float* y, int64_t repeats, int64_t block) {
  for (int64_t r = 0; r < repeats; ++r) {
    for (int64_t i = 0; i < block; ++i) y[r * block + i] = x[r * block + i] + table[i];
  }
}

void swap_middle(const float* x, float* y, int64_t a, int64_t b, int64_t c, int64_t d) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t k = 0; k < c; ++k) {
        std::memcpy(y + ((i * c + k) * b + j) * d, x + ((i * b + j) * c + k) * d, sizeof(float) * d);
      }
    }
  }
}

}  // namespace sb::cpu
