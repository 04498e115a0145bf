// Whether a kernel may move rows of T as 16-byte packs (Pack<T, kElementsPer16Bytes<T>>): the row length is a
// multiple of a pack and every pointer is 16-byte aligned, so each row starts aligned too. Kernels that vectorise
// over channels (GLU, upsample, pooling, blur, RoIAlign, frozen affine) fall back to one element a thread otherwise.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "src/cuda/element.h"
#include "src/cuda/grid.h"

namespace sb::cuda {

template <typename T>
bool rows_fit_16_byte_packs(int64_t row_length, std::initializer_list<const void*> pointers) {
  if (row_length % kElementsPer16Bytes<T> != 0) return false;
  for (const void* p : pointers) {
    if (!detail::aligned_16(p)) return false;
  }
  return true;
}

}  // namespace sb::cuda
