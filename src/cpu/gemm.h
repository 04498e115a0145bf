// CPU reference GEMM (sb::cpu), the numerical reference for every dense layer, projection and attention
// product: row-major, BLAS argument order, fp64 accumulation, one rounding to fp32 per output element.
// Plain loops, not a fast path. Tests: tests/unit/test_cpu_gemm.cpp (suite CpuGemm).
#pragma once

#include <cstdint>

namespace sb::cpu {

// C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C, all row-major.
//   op(A) = A, stored (m, k) with lda >= k,    when !transpose_a;
//         = Aᵀ, A stored (k, m) with lda >= m, when transpose_a.   Same for B: (k, n) / (n, k), ldb.
//   ldc >= n. Each element is sum_p op(A)[i][p] * op(B)[p][j] in double, then alpha and beta applied in
//   double, then rounded once to float.
// beta == 0 means C is not read (BLAS semantics): stale NaN in C does not leak into the result. C must not
// overlap A or B. Throws UsageError on a negative size or a leading dimension that is too small.
// Backward of C = A·B, as the engine calls it (dC the gradient of C; both outputs overwritten with beta 0):
//   dA = dC · Bᵀ  -> gemm(false, true,  m, k, n, 1, dC, ldc, B, ldb, 0, dA, lda)
//   dB = Aᵀ · dC  -> gemm(true,  false, k, n, m, 1, A, lda, dC, ldc, 0, dB, ldb)
// (transposed operands swap roles accordingly; tests cover all four transpose settings).
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// `batch` independent GEMMs with the same shapes; operand g starts at a + g * stride_a (elements), and so
// on. A stride of 0 shares one operand across the batch (one weight matrix for every head, say). The
// C matrices of different batch entries must not overlap.
void gemm_strided_batched(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                          int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c);

}  // namespace sb::cpu
