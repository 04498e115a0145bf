// The gemm family (gemm: GraphBuilder::linear and matmul, and every weight/input gradient of them): C = alpha
// op(A) op(B) (+ bias), batched over leading dimensions. Kernels: src/cpu/gemm.cpp, src/cuda/gemm*.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// One gemm node's sizes: op(A) is (m, k), op(B) (k, n), C (m, n), `batch` such products side by side.
struct GemmParams {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0;
  int64_t batch = 1;
};
NodeAttributes encode(const GemmParams& params);
GemmParams gemm_params(const Node& node);

}  // namespace sb
