// How many key bits a radix sort must look at to tell `count` segments apart (0 for one), for the detection sorts
// that put a segment index in the key's top bits and sort a whole batch at once (src/cuda/proposals.cu,
// src/cuda/detection_targets.cu).
#pragma once

#include <cstdint>

namespace sb::cuda {

inline int bits_to_tell_apart(int64_t count) {
  int bits = 0;
  while (count - 1 >= (int64_t{1} << bits)) ++bits;
  return bits;
}

}  // namespace sb::cuda
