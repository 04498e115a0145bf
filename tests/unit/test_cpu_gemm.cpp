// sb::cpu::gemm and gemm_strided_batched (src/cpu/gemm.h) against a double-precision formula on fresh random
// data, every transpose setting, padded leading dimensions with NaN in the padding (it must not be read),
// small-integer exact products, and dA = dC·Bᵀ / dB = Aᵀ·dC by finite differences, computed with gemm itself.
// Run: build/tests/unit_tests --gtest_filter='CpuGemm*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/gemm.h"
#include "tests/support/gradient_check.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// Kernel and formula both sum in double; they differ by the final rounding to fp32 (2^-24 relative) and
// summation-order noise far below it. atol covers outputs that cancel to near zero.
constexpr double kFloat32Rtol = 1e-6;
constexpr double kFloat32Atol = 1e-6;
constexpr double kGradientTolerance = 1e-2;  // relative error of finite differences (eps 1e-3, fp32 outputs)
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Operand {
  std::vector<float> data;  // stored rows x ld, the padding columns NaN
  int64_t rows = 0, cols = 0, ld = 0;
  float at(int64_t r, int64_t c) const { return data[r * ld + c]; }
};

// A stored (rows, cols) matrix of fresh normal values with `pad` NaN columns after each row.
Operand random_operand(int64_t rows, int64_t cols, int64_t pad, uint32_t seed) {
  Operand op{test::random_normal(static_cast<size_t>(rows * (cols + pad)), seed), rows, cols, cols + pad};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < op.ld; ++c) op.data[r * op.ld + c] = kNaN;
  return op;
}

// op(X)[r][c] of an operand stored transposed or not.
float op_at(const Operand& x, bool transpose, int64_t r, int64_t c) {
  return transpose ? x.at(c, r) : x.at(r, c);
}

struct Shape {
  int64_t m, n, k;
};

std::string label(bool ta, bool tb, const Shape& s) {
  return std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " m=" + std::to_string(s.m) +
         " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k);
}

TEST(CpuGemm, ForwardMatchesDoubleFormula) {
  const Shape shapes[] = {{1, 1, 1}, {3, 5, 7}, {8, 8, 8}, {17, 9, 13}, {2, 33, 1}, {31, 2, 40}};
  const float alphas[] = {1.0f, 0.75f};
  const float betas[] = {0.0f, -1.5f};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (int variant = 0; variant < 2; ++variant) {
        const float alpha = alphas[variant], beta = betas[variant];
        const int64_t pad = variant;  // the second variant pads every leading dimension by one NaN column
        const Operand a = ta ? random_operand(s.k, s.m, pad, ++seed) : random_operand(s.m, s.k, pad, ++seed);
        const Operand b = tb ? random_operand(s.n, s.k, pad, ++seed) : random_operand(s.k, s.n, pad, ++seed);
        // C: poison (beta 0 must not read it) or fresh values that beta scales; padding stays NaN.
        Operand c = random_operand(s.m, s.n, pad, ++seed);
        if (beta == 0.0f) c.data = test::poisoned(c.data.size());
        const Operand c_in = c;

        cpu::gemm(ta, tb, s.m, s.n, s.k, alpha, a.data.data(), a.ld, b.data.data(), b.ld, beta, c.data.data(),
                  c.ld);

        std::vector<float> got;
        std::vector<double> ref;
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < s.k; ++p) sum += double(op_at(a, ta, i, p)) * op_at(b, tb, p, j);
            ref.push_back(alpha * sum + (beta != 0.0f ? double(beta) * c_in.at(i, j) : 0.0));
            got.push_back(c.at(i, j));
          }
          for (int64_t j = s.n; j < c.ld; ++j) EXPECT_TRUE(std::isnan(c.at(i, j))) << "padding written";
        }
        const auto cmp = test::compare_close(got, ref, kFloat32Atol, kFloat32Rtol);
        EXPECT_TRUE(cmp.ok()) << label(ta, tb, s) << " alpha " << alpha << " beta " << beta << ": "
                              << cmp.description;
        EXPECT_GT(test::l2_norm(got), 0.0) << label(ta, tb, s);
      }
    }
  }
}

// STYLE.md rule 4: integers in [-8, 8] make every partial sum exact, so any summation order (and the CUDA
// GEMM later) must give these results bit for bit.
TEST(CpuGemm, SmallIntegerProductsAreExact) {
  const int64_t m = 6, n = 10, k = 64;
  const auto ia = test::random_ids(m * k, 7, -8, 8);
  const auto ib = test::random_ids(n * k, 8, -8, 8);
  const std::vector<float> a(ia.begin(), ia.end()), b(ib.begin(), ib.end());  // A (m, k), B stored (n, k)
  std::vector<float> c = test::poisoned(m * n);
  cpu::gemm(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += int64_t(ia[i * k + p]) * ib[j * k + p];
      ASSERT_EQ(c[i * n + j], float(sum)) << "(" << i << ", " << j << ")";
    }
  }
  EXPECT_GT(test::l2_norm(c), 0.0);
}

TEST(CpuGemm, EmptyInnerDimensionScalesC) {
  std::vector<float> c = test::random_normal(6, 3);
  const std::vector<float> before = c;
  const float unused = kNaN;  // k = 0: A and B have no elements to read
  cpu::gemm(false, false, 2, 3, 0, 1.0f, &unused, 1, &unused, 3, 2.0f, c.data(), 3);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], 2.0f * before[i]);
  cpu::gemm(false, false, 2, 3, 0, 1.0f, &unused, 1, &unused, 3, 0.0f, c.data(), 3);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// Each batch entry equals a plain gemm on its slices (bit for bit: same loops), a stride of 0 shares an
// operand, and the gaps between C matrices stay untouched.
TEST(CpuGemm, StridedBatchedMatchesPerEntryGemm) {
  const int64_t m = 5, n = 7, k = 3, batch = 3;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
    const int64_t stride_a = m * k + 2, stride_b = 0, stride_c = m * n + 4;  // B shared, gaps in A and C
    const auto a = test::random_normal(stride_a * batch, 21 + t);
    const auto b = test::random_normal(k * n, 31 + t);
    std::vector<float> c = test::poisoned(stride_c * batch);
    cpu::gemm_strided_batched(ta, tb, m, n, k, 1.25f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc, batch,
                              stride_a, stride_b, stride_c);
    for (int64_t g = 0; g < batch; ++g) {
      std::vector<float> expected = test::poisoned(m * n);
      cpu::gemm(ta, tb, m, n, k, 1.25f, a.data() + g * stride_a, lda, b.data(), ldb, 0.0f, expected.data(), ldc);
      for (int64_t e = 0; e < m * n; ++e) ASSERT_EQ(c[g * stride_c + e], expected[e]) << "batch " << g;
      for (int64_t e = m * n; e < stride_c; ++e) ASSERT_TRUE(std::isnan(c[g * stride_c + e])) << "gap written";
      EXPECT_GT(test::l2_norm(expected), 0.0);
    }
  }
}

// Loss = sum w ∘ C; dC = w. The gradients are computed with gemm in the forms the engine uses, for each
// transpose setting (a transposed operand's gradient is the transpose of the plain formula).
TEST(CpuGemm, GradientsMatchFiniteDifferences) {
  const int64_t m = 5, n = 4, k = 6;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    auto a = test::random_normal(m * k, 40 + t);
    auto b = test::random_normal(k * n, 50 + t);
    const auto w = test::random_normal(m * n, 60 + t);  // dC
    auto loss = [&] {
      std::vector<float> c = test::poisoned(m * n);
      cpu::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
      return test::project(c, w);
    };
    std::vector<float> da = test::poisoned(m * k), db = test::poisoned(k * n);
    if (!ta) {  // dA (m, k) = dC · op(B)ᵀ
      cpu::gemm(false, !tb, m, k, n, 1.0f, w.data(), n, b.data(), ldb, 0.0f, da.data(), k);
    } else {    // dA stored (k, m) = op(B) · dCᵀ
      cpu::gemm(tb, true, k, m, n, 1.0f, b.data(), ldb, w.data(), n, 0.0f, da.data(), m);
    }
    if (!tb) {  // dB (k, n) = op(A)ᵀ · dC
      cpu::gemm(!ta, false, k, n, m, 1.0f, a.data(), lda, w.data(), n, 0.0f, db.data(), n);
    } else {    // dB stored (n, k) = dCᵀ · op(A)
      cpu::gemm(true, ta, n, k, m, 1.0f, w.data(), n, a.data(), lda, 0.0f, db.data(), k);
    }
    ASSERT_EQ(test::count_unwritten(da), 0u);
    ASSERT_EQ(test::count_unwritten(db), 0u);
    const auto ga = test::compare_with_finite_differences(a, loss, da);
    const auto gb = test::compare_with_finite_differences(b, loss, db);
    EXPECT_LE(ga.relative_error, kGradientTolerance) << "dA " << (ta ? "T" : "N") << (tb ? "T" : "N") << ": "
                                                     << ga.describe();
    EXPECT_LE(gb.relative_error, kGradientTolerance) << "dB " << (ta ? "T" : "N") << (tb ? "T" : "N") << ": "
                                                     << gb.describe();
    EXPECT_GT(ga.analytic_norm, 0.0);
    EXPECT_GT(gb.analytic_norm, 0.0);
  }
}

TEST(CpuGemm, RejectsInvalidShapes) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 0.0f);
  EXPECT_THROW(cpu::gemm(false, false, -1, 2, 2, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2), UsageError);
  EXPECT_THROW(cpu::gemm(false, false, 2, 2, 3, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2), UsageError);
  EXPECT_THROW(cpu::gemm(true, false, 4, 2, 3, 1, a.data(), 3, b.data(), 2, 0, c.data(), 2), UsageError);
  EXPECT_THROW(cpu::gemm(false, true, 2, 2, 3, 1, a.data(), 3, b.data(), 2, 0, c.data(), 2), UsageError);
  EXPECT_THROW(cpu::gemm(false, false, 2, 4, 3, 1, a.data(), 3, b.data(), 4, 0, c.data(), 3), UsageError);
  EXPECT_THROW(cpu::gemm_strided_batched(false, false, 2, 2, 2, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2, 2,
                                         4, 4, 3),
               UsageError);  // C matrices of 4 elements 3 apart overlap
}

}  // namespace
}  // namespace sb
