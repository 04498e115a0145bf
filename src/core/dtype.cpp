// Element type names, sizes and exactness limits.
#include "scalebench/dtype.h"

#include "scalebench/error.h"

namespace sb {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
  bool floating;
  double exact_integer_limit;  // 2^(mantissa bits + 1)
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "fp32", 4, true, 16777216.0},
    {DType::kBFloat16, "bf16", 2, true, 256.0},
    {DType::kFloat16, "fp16", 2, true, 2048.0},
    {DType::kFloat64, "fp64", 8, true, 9007199254740992.0},
    {DType::kInt32, "int32", 4, false, 2147483647.0},
    {DType::kUInt8, "uint8", 1, false, 255.0},
};

const DTypeInfo& info(DType type) {
  for (const DTypeInfo& entry : kDTypes) {
    if (entry.type == type) return entry;
  }
  SB_FATAL("unknown dtype");
}

}  // namespace

size_t dtype_size(DType type) { return info(type).size; }
const char* dtype_name(DType type) { return info(type).name; }
bool dtype_is_floating(DType type) { return info(type).floating; }
double dtype_exact_integer_limit(DType type) { return info(type).exact_integer_limit; }

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const DTypeInfo& entry : kDTypes) names.push_back(entry.name);
  return names;
}

DType parse_dtype(const std::string& text) {
  for (const DTypeInfo& entry : kDTypes) {
    if (text == entry.name) return entry.type;
  }
  // Accept the spellings nccl-tests and PyTorch users type.
  if (text == "float" || text == "float32") return DType::kFloat32;
  if (text == "bfloat16") return DType::kBFloat16;
  if (text == "half" || text == "float16") return DType::kFloat16;
  if (text == "double" || text == "float64") return DType::kFloat64;
  if (text == "int") return DType::kInt32;
  std::string accepted;
  for (const DTypeInfo& entry : kDTypes) accepted += (accepted.empty() ? "" : ", ") + std::string(entry.name);
  throw UsageError("unknown dtype '" + text + "' (accepted: " + accepted + ")");
}

}  // namespace sb
