// CUDA GEMM (sb::cuda) through cuBLASLt: the same names, arguments and row-major conventions as
// src/cpu/gemm.h plus the stream; device pointers. fp32 data, fp32 compute (CUBLAS_COMPUTE_32F: no TF32),
// so results agree with the CPU's double sums to fp32 accumulation error; or bf16 / fp16 operands on tensor
// cores with fp32 accumulation and a result of the operands' type or fp32 (mixed precision). beta == 0 never reads C.
// Tests: tests/gpu/test_cuda_dense.cpp (suite CudaDense).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/cuda/element.h"

namespace sb::cuda {

// The arithmetic of this thread's GEMMs: exact fp32 (the default, comparable with the CPU) or TF32 tensor
// cores (CUBLAS_COMPUTE_32F_FAST_TF32: fp32 data, 10-bit mantissa products, fp32 accumulation).
enum class GemmMath { kFp32, kTf32 };
void set_gemm_math(GemmMath math);

// The cuBLASLt workspace of the GEMMs on a stream: 32 MiB, allocated on a stream's first GEMM and kept, unless
// its owner lends one for the stream's life (the executor does, so that its memory is counted and freed).
uint64_t gemm_workspace_bytes();
void lend_gemm_workspace(cudaStream_t stream, void* workspace);
void take_back_gemm_workspace(cudaStream_t stream);

// C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C, row-major, as sb::cpu::gemm. Throws UsageError
// on a negative size or a leading dimension that is too small (checked on the host, before any launch).
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, cudaStream_t stream);

// `batch` GEMMs; operand g at a + g * stride_a (elements), and so on; a stride of 0 shares that operand.
// Instantiated for (AB, C) = (float, float), (bf16, bf16), (bf16, float), (fp16, fp16) and (fp16, float).
// With `bias` (n values of C's type; batch 1, beta 0, ldc == n), C = alpha op(A) op(B) + bias on every row,
// fused into cuBLASLt's epilogue (for an fp32 C without an algorithm for it, a separate bias kernel).
template <typename AB, typename C>
void gemm_strided_batched(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const AB* a, int64_t lda, const AB* b, int64_t ldb, float beta, C* c, int64_t ldc,
                          int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c, cudaStream_t stream,
                          const C* bias = nullptr);

}  // namespace sb::cuda
