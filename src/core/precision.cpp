// Training precision names and what each stores (include/scalebench/precision.h).
#include "scalebench/precision.h"

#include "scalebench/error.h"

namespace sb {

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") return Precision::kFp16;
  throw UsageError("--precision must be fp32, tf32, bf16 or fp16, not '" + text + "'");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

const char* precision_description(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "fp32 data, TF32 GEMMs";
    case Precision::kBf16: return "bf16 mixed precision (fp32 master weights and accumulation)";
    case Precision::kFp16: return "fp16 mixed precision with dynamic loss scaling (fp32 master weights)";
  }
  return "?";
}

DType activation_dtype(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return DType::kBFloat16;
    case Precision::kFp16: return DType::kFloat16;
    case Precision::kFp32:
    case Precision::kTf32: return DType::kFloat32;
  }
  return DType::kFloat32;
}

bool precision_needs_cuda(Precision precision) { return precision != Precision::kFp32; }

}  // namespace sb
