// CPU reference casts (src/cpu/cast.h): loops over the scalar conversions of src/core/half_precision.cpp,
// which hold the rounding rules and their own exhaustive tests.
#include "src/cpu/cast.h"

#include <string>

#include "scalebench/error.h"
#include "scalebench/half_precision.h"

namespace sb::cpu {
namespace {

void check_count(const char* op, int64_t n) {
  if (n < 0) throw UsageError(std::string(op) + ": negative element count " + std::to_string(n));
}

}  // namespace

void cast_float_to_bf16(const float* x, uint16_t* y, int64_t n) {
  check_count("cast_float_to_bf16", n);
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_bf16_bits(x[i]);
}

void cast_bf16_to_float(const uint16_t* x, float* y, int64_t n) {
  check_count("cast_bf16_to_float", n);
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_float(x[i]);
}

void cast_float_to_fp16(const float* x, uint16_t* y, int64_t n) {
  check_count("cast_float_to_fp16", n);
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_fp16_bits(x[i]);
}

void cast_fp16_to_float(const uint16_t* x, float* y, int64_t n) {
  check_count("cast_fp16_to_float", n);
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_bits_to_float(x[i]);
}

}  // namespace sb::cpu
