// CPU reference GEMM (src/cpu/gemm.h). Loop order keeps the innermost loop contiguous in memory for each
// transpose setting, so the test-sized problems stay fast without blocking or threads.
#include "src/cpu/gemm.h"

#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/bias.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void require(bool condition, const std::string& what) {
  if (!condition) throw UsageError("gemm: " + what);
}

void check_shape(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                 int64_t ldb, int64_t ldc) {
  require(m >= 0 && n >= 0 && k >= 0,
          "negative size m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const int64_t a_cols = transpose_a ? m : k;  // columns of A as stored
  const int64_t b_cols = transpose_b ? k : n;
  require(lda >= (a_cols > 1 ? a_cols : 1), "lda " + std::to_string(lda) + " < " + std::to_string(a_cols));
  require(ldb >= (b_cols > 1 ? b_cols : 1), "ldb " + std::to_string(ldb) + " < " + std::to_string(b_cols));
  require(ldc >= (n > 1 ? n : 1), "ldc " + std::to_string(ldc) + " < " + std::to_string(n));
}

// One GEMM after the checks. `row` is scratch of n doubles.
void gemm_unchecked(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc, std::vector<double>& row) {
  for (int64_t i = 0; i < m; ++i) {
    if (!transpose_b) {
      // i-p-j: row i of C accumulates a scaled row p of B (contiguous) per step.
      for (int64_t j = 0; j < n; ++j) row[j] = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double a_ip = transpose_a ? a[p * lda + i] : a[i * lda + p];
        const float* b_row = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += a_ip * b_row[j];
      }
    } else {
      // B stored (n, k): each C element is a dot product of two contiguous rows when A is not transposed.
      for (int64_t j = 0; j < n; ++j) {
        const float* b_row = b + j * ldb;
        double sum = 0.0;
        if (!transpose_a) {
          const float* a_row = a + i * lda;
          for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(a_row[p]) * b_row[p];
        } else {
          for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(a[p * lda + i]) * b_row[p];
        }
        row[j] = sum;
      }
    }
    float* c_row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      double value = static_cast<double>(alpha) * row[j];
      if (beta != 0.0f) value += static_cast<double>(beta) * c_row[j];
      c_row[j] = static_cast<float>(value);
    }
  }
}

}  // namespace

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check_shape(transpose_a, transpose_b, m, n, k, lda, ldb, ldc);
  std::vector<double> row(static_cast<size_t>(n));
  gemm_unchecked(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, row);
}

void gemm_strided_batched(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                          int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  check_shape(transpose_a, transpose_b, m, n, k, lda, ldb, ldc);
  require(batch >= 0, "negative batch " + std::to_string(batch));
  require(stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "negative stride");
  require(batch <= 1 || m == 0 || n == 0 || stride_c >= (m - 1) * ldc + n,
          "stride_c " + std::to_string(stride_c) + " makes the C matrices of the batch overlap");
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t g = 0; g < batch; ++g) {
    gemm_unchecked(transpose_a, transpose_b, m, n, k, alpha, a + g * stride_a, lda, b + g * stride_b, ldb,
                   beta, c + g * stride_c, ldc, row);
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void gemm(CpuExecutor& e, const Node& node) {
  const bool ta = size_attr(node, "transpose_a") != 0, tb = size_attr(node, "transpose_b") != 0;
  const int64_t m = size_attr(node, "m"), n = size_attr(node, "n"), k = size_attr(node, "k");
  const int64_t batch = size_attr(node, "batch");
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  cpu::gemm_strided_batched(ta, tb, m, n, k, float_attr(node, "alpha"), e.f32(node.inputs[0]), lda,
                            e.f32(node.inputs[1]), ldb, 0.0f, e.f32(node.outputs[0]), n, batch, m * k, k * n, m * n);
  if (node.inputs.size() > 2) cpu::bias_add_forward(e.f32(node.outputs[0]), e.f32(node.inputs[2]), m * batch, n);
}

}  // namespace

void bind_gemm_cpu(CpuKernelTable& table) { bind_cpu_kernels(table, {{"gemm", gemm}}); }

}  // namespace sb::detail
