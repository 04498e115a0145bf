// Training precision, as `--precision` names it. fp32: fp32 everywhere (the CPU reference's arithmetic).
// tf32: fp32 data, GEMMs on TF32 tensor cores. bf16: mixed precision as PyTorch autocast does it —
// activations, their gradients and GEMM operands in bf16 with fp32 accumulation; fp32 master weights,
// weight gradients, optimizer state, losses and normalisation statistics. fp16: the same with fp16, plus dynamic
// loss scaling (loss_scale.h, GradScaler's rule), which the CUDA executor turns on for any graph holding fp16.
#pragma once

#include <string>

#include "scalebench/dtype.h"

namespace sb {

enum class Precision { kFp32, kTf32, kBf16, kFp16 };

// "fp32" | "tf32" | "bf16" | "fp16"; anything else is a UsageError naming the choices.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);
const char* precision_description(Precision precision);  // one phrase for report headers
DType activation_dtype(Precision precision);             // what the graph stores activations in
bool precision_needs_cuda(Precision precision);          // the CPU device computes in fp32 only

}  // namespace sb
