// Round-to-nearest-even conversions for bf16 and fp16 on the host (include/scalebench/half_precision.h).
#include "scalebench/half_precision.h"

#include <cmath>
#include <cstring>

namespace sb {

uint16_t float_to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // keep it a quiet NaN
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t bits) {
  const uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof value);
  return value;
}

uint16_t float_to_fp16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return sign | 0x7E00;  // NaN
  if (magnitude >= 0x47800000) {                     // >= 65536 before rounding: inf (or overflow)
    // Values in [65520, 65536) round to inf as well; handled by the general path below otherwise.
    return sign | 0x7C00;
  }
  if (magnitude < 0x33000000) return sign;  // below half the smallest subnormal: zero
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;  // implicit bit
  int shift;
  uint16_t half_exponent;
  if (exponent < -14) {  // subnormal half
    shift = 13 + (-14 - exponent);
    half_exponent = 0;
  } else {
    shift = 13;
    half_exponent = static_cast<uint16_t>(exponent + 15);
    mantissa &= 0x7FFFFF;  // drop the implicit bit; carry into the exponent handles rounding up
  }
  uint32_t kept = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (kept & 1))) ++kept;
  return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(half_exponent) << 10) + kept));
}

float fp16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  uint32_t result;
  if (exponent == 0x1F) {
    result = sign | 0x7F800000 | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      result = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400) == 0);
      result = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | ((mantissa & 0x3FF) << 13);
    }
  } else {
    result = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &result, sizeof value);
  return value;
}

}  // namespace sb
