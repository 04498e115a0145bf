// Training precision names and what each stores (include/scalebench/precision.h).
#include "scalebench/precision.h"

#include "scalebench/error.h"

namespace sb {

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") {
    throw UsageError("--precision fp16 needs dynamic loss scaling, which comes with the data-parallel trainer; "
                     "use bf16, tf32 or fp32");
  }
  throw UsageError("--precision must be fp32, tf32 or bf16, not '" + text + "'");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

const char* precision_description(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "fp32 data, TF32 GEMMs";
    case Precision::kBf16: return "bf16 mixed precision (fp32 master weights and accumulation)";
  }
  return "?";
}

DType activation_dtype(Precision precision) {
  return precision == Precision::kBf16 ? DType::kBFloat16 : DType::kFloat32;
}

bool precision_needs_cuda(Precision precision) { return precision != Precision::kFp32; }

}  // namespace sb
