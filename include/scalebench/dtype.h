// Element types that scalebench moves and computes with.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sb {

// kUInt8 holds masks (dropout) inside the engine; collectives refuse it.
enum class DType { kFloat32, kBFloat16, kFloat16, kFloat64, kInt32, kUInt8 };

size_t dtype_size(DType type);
const char* dtype_name(DType type);         // "fp32", "bf16", ...
DType parse_dtype(const std::string& text);  // throws UsageError naming the accepted values
std::vector<std::string> dtype_names();
bool dtype_is_floating(DType type);

// Largest integer n such that every integer in [-n, n] is exact in `type`; bounds check data so that
// sums of small integers stay exact in any reduction order.
double dtype_exact_integer_limit(DType type);

}  // namespace sb
