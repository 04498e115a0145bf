// The bias family: bias_backward, the column sums of a (rows, cols) gradient that the gemm, conv2d and layout
// rules emit for a bias or broadcast table. No GraphBuilder method (a bias is added inside gemm's epilogue or by
// add_broadcast). Kernels: src/cpu/bias.cpp, src/cuda/bias.cu.
#include "src/core/ops/op_registry.h"

namespace sb {

const OpDefs& bias_ops() {
  static const OpDefs ops = {
      {"bias_backward", "bias", OpGradient::kNotDifferentiable, nullptr},
  };
  return ops;
}

}  // namespace sb
