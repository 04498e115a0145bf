// Host conversions between float and the 16-bit floating types, bit-exact with the CUDA intrinsics
// (round to nearest even), so CPU reference results and CUDA results can be compared element by element.
#pragma once

#include <cstdint>

namespace sb {

uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_fp16_bits(float value);
float fp16_bits_to_float(uint16_t bits);

}  // namespace sb
