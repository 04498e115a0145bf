// Host vectors for a kernel element type T (float, cuda::bf16 or cuda::fp16) in the gpu tests: how T is stored
// on the device (float, or 16-bit patterns), the float values T can hold, and the conversions both ways. One
// copy for the typed op tests (they kept their own before).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "src/cuda/element.h"
#include "tests/support/bf16_data.h"
#include "tests/support/fp16_data.h"

namespace sb::test {

template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, float>, float, uint16_t>;

// What T holds of these values: the inputs both devices see.
template <typename T>
std::vector<float> representable(const std::vector<float>& values) {
  if constexpr (std::is_same_v<T, float>) return values;
  if constexpr (std::is_same_v<T, cuda::bf16>) return round_to_bf16(values).values;
  if constexpr (std::is_same_v<T, cuda::fp16>) return round_to_fp16(values).values;
}

template <typename T>
std::vector<Storage<T>> to_storage(const std::vector<float>& values) {
  if constexpr (std::is_same_v<T, float>) return values;
  if constexpr (std::is_same_v<T, cuda::bf16>) return bf16_bits_of(values);
  if constexpr (std::is_same_v<T, cuda::fp16>) return fp16_bits_of(values);
}

template <typename T>
std::vector<float> from_storage(const std::vector<Storage<T>>& stored) {
  if constexpr (std::is_same_v<T, float>) return stored;
  if constexpr (std::is_same_v<T, cuda::bf16>) return widen(stored);
  if constexpr (std::is_same_v<T, cuda::fp16>) return widen_fp16(stored);
}

}  // namespace sb::test
