// Reading and writing one element of any DType through a double, for the CPU reference loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "scalebench/dtype.h"
#include "scalebench/half_precision.h"

namespace sb::cpu {

inline double load_element(const void* buffer, size_t index, DType type) {
  switch (type) {
    case DType::kFloat32: return static_cast<const float*>(buffer)[index];
    case DType::kFloat64: return static_cast<const double*>(buffer)[index];
    case DType::kInt32: return static_cast<const int32_t*>(buffer)[index];
    case DType::kUInt8: return static_cast<const uint8_t*>(buffer)[index];
    case DType::kBFloat16: return bf16_bits_to_float(static_cast<const uint16_t*>(buffer)[index]);
    case DType::kFloat16: return fp16_bits_to_float(static_cast<const uint16_t*>(buffer)[index]);
  }
  return 0;
}

inline void store_element(void* buffer, size_t index, DType type, double value) {
  switch (type) {
    case DType::kFloat32: static_cast<float*>(buffer)[index] = static_cast<float>(value); return;
    case DType::kFloat64: static_cast<double*>(buffer)[index] = value; return;
    case DType::kInt32: static_cast<int32_t*>(buffer)[index] = static_cast<int32_t>(value); return;
    case DType::kUInt8: static_cast<uint8_t*>(buffer)[index] = static_cast<uint8_t>(value); return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(buffer)[index] = float_to_bf16_bits(static_cast<float>(value));
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(buffer)[index] = float_to_fp16_bits(static_cast<float>(value));
      return;
  }
}

}  // namespace sb::cpu
