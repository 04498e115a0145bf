// The bf16 instantiations of the elementwise CUDA kernels (src/cuda/{cast,activations,bias,dropout,layout}.h)
// against the CPU reference (src/cpu, same names) run in fp32 on the same bf16-rounded inputs. Ops whose fp32
// result is one IEEE operation (ReLU, add, scale, bias add, dropout, broadcast add, copies, casts) must give
// the CPU result rounded to bf16 bit for bit; transcendentals are within one bf16 ulp. Sizes hit the 16-byte
// vector body, the tail and the scalar path (pointers off 16-byte alignment); outputs are poisoned (0xFF
// bytes: a bf16 NaN) first and the elements just outside them must stay poisoned. The row-wise kernels' bf16
// tests are in test_cuda_bf16_ops.cpp. Skips without a GPU. Run: gpu_tests --gtest_filter='CudaBf16*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/half_precision.h"
#include "src/cpu/activations.h"
#include "src/cpu/bias.h"
#include "src/cpu/dropout.h"
#include "src/cpu/layout.h"
#include "src/cuda/activations.h"
#include "src/cuda/bias.h"
#include "src/cuda/cast.h"
#include "src/cuda/dropout.h"
#include "src/cuda/element.h"
#include "src/cuda/layout.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using cuda::bf16;
using test::CudaArray;
using test::TestStream;

// ---------------------------------------------------------------- tolerances
// bf16 keeps 8 significant bits: one rounding is off by at most half an ulp, 2^-8 of the value. A kernel's
// fp32 result e away from the CPU's can round to the neighbouring bf16 value, so the stored value is within
// e (1 + 2^-8) + 2^-8 |ref| of the CPU's unrounded fp32 result. With the float test's bound
// e <= atol + rtol |ref| (rtol <= 1e-5, tests/gpu/test_cuda_dense.cpp) that is below 2 atol + 2^-7 |ref|:
// kBf16Rtol, one bf16 ulp (7.8e-3), and twice each float atol.
constexpr double kBf16Rtol = 1.0 / 128;
constexpr double kBf16TranscendentalAtol = 2e-6;  // float: 1e-6 (GELU derivatives cross 0 near x = -0.75)
constexpr double kBf16PolynomialAtol = 0.0;  // tanh backward (float: 0): a few roundings, no cancellation
// bias_backward: fp32 output of a double column sum of the same bf16 values on both sides; only the final
// fp32 rounding (1 ulp, < 1.2e-7) and double-order noise differ, as in the float test.
constexpr double kBiasSumRtol = 1e-6;
constexpr double kBiasSumAtol = 1e-8;

// ---------------------------------------------------------------- checks

void expect_bits(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const std::string& what) {
  const test::BitComparison c = test::compare_bits(got, want);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

// Every element written (the poison is a NaN) and |got - ref| <= atol + rtol |ref| against the fp32 CPU result.
void expect_close(const std::vector<uint16_t>& got, const std::vector<float>& ref, double atol, double rtol,
                  const std::string& what) {
  const test::CloseComparison c = test::compare_close(test::widen(got), test::to_double(ref), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

// The view [front, size - back) of a downloaded buffer; the margins around it must still hold the poison.
std::vector<uint16_t> view(const std::vector<uint16_t>& all, size_t front, size_t back) {
  EXPECT_TRUE(test::margins_poisoned(all, front, back)) << "wrote outside the output";
  return test::inside_margins(all, front, back);
}

// ---------------------------------------------------------------- cast

// Finite values of every magnitude, ties in both directions, subnormals, overflow and infinities.
std::vector<float> cast_inputs(size_t n, uint32_t seed) {
  std::vector<float> x = test::random_normal(n, seed);
  const std::vector<float> exponents = test::random_uniform(n, seed + 1, -140.0f, 127.0f);
  for (size_t i = 0; i < n; i += 3) x[i] = std::ldexp(x[i], static_cast<int>(exponents[i]));
  const uint32_t special_bits[] = {
      0x00000000u, 0x80000000u,  // +-0
      0x3F808000u, 0x3F818000u,  // 1 + 2^-8 (tie, rounds down to even), 1 + 3 * 2^-8 (tie, rounds up to even)
      0xBF808000u, 0xBF818000u,  // the same ties negative
      0x3F808001u, 0x3F807FFFu,  // just above and below a tie
      0x00000001u, 0x00008000u, 0x00018000u, 0x007FFFFFu,  // subnormals: smallest, ties, largest
      0x7F7FFFFFu, 0xFF7FFFFFu,  // +-FLT_MAX: round to +-inf
      0x7F7F7FFFu, 0x7F800000u, 0xFF800000u,  // largest value that stays finite, +-inf
  };
  size_t at = 1;
  for (uint32_t bits : special_bits) {
    if (at >= n) break;
    std::memcpy(&x[at], &bits, sizeof bits);
    at += 3;  // not all at the start: some land inside vectors, some in the tail when n is small
  }
  return x;
}

TEST(CudaBf16Cast, FloatToBf16RoundsToNearestEvenLikeTheHost) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // Vector body + tail; one whole vector; tail only. Offsets in elements of (x, y): 1 forces the scalar path.
  const size_t sizes[] = {1000003, 8, 5};
  const size_t offsets[][2] = {{0, 0}, {1, 1}, {0, 1}, {4, 8}};
  uint32_t seed = 100;
  for (size_t n : sizes)
    for (const auto& off : offsets) {
      SCOPED_TRACE("n=" + std::to_string(n) + " offsets " + std::to_string(off[0]) + "," + std::to_string(off[1]));
      std::vector<float> x = cast_inputs(n, seed += 2);
      ASSERT_GT(test::l2_norm(x), 0.0);
      const std::vector<uint16_t> want = test::bf16_bits_of(x);
      std::vector<float> x_host(off[0], 0.0f);
      x_host.insert(x_host.end(), x.begin(), x.end());
      CudaArray<float> d_x(x_host);
      CudaArray<uint16_t> d_y(n + 2 * off[1]);
      d_y.poison();
      TestStream stream;
      cuda::cast(d_x.get() + off[0], test::as_bf16(d_y.get()) + off[1], static_cast<int64_t>(n), stream.get());
      stream.sync();
      const std::vector<uint16_t> got = view(d_y.download(), off[1], off[1]);
      expect_bits(got, want, "float -> bf16");
    }
}

TEST(CudaBf16Cast, NaNStaysNaN) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // The NaN pattern itself is not part of the contract (the host keeps the payload, the device may
  // canonicalise); a NaN must not become a number.
  std::vector<float> x = test::random_normal(21, 150);
  const uint32_t nan_bits[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu};
  for (size_t i = 0; i < 4; ++i) std::memcpy(&x[5 * i + 2], &nan_bits[i], sizeof(uint32_t));
  CudaArray<float> d_x(x);
  CudaArray<uint16_t> d_y(x.size());
  d_y.poison();
  TestStream stream;
  cuda::cast(d_x.get(), test::as_bf16(d_y.get()), static_cast<int64_t>(x.size()), stream.get());
  stream.sync();
  const std::vector<float> got = test::widen(d_y.download());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(x[i])), got[i]) << i;
    }
  }
}

TEST(CudaBf16Cast, Bf16ToFloatIsExactForEveryPattern) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  std::vector<uint16_t> all(65536 + 5);  // every pattern, then a 5-element tail
  for (size_t b = 0; b < all.size(); ++b) all[b] = static_cast<uint16_t>(b * 40503u);  // a permutation of 2^16
  for (size_t off : {0, 1}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    CudaArray<uint16_t> d_x(test::with_margins(all, off, 0));
    CudaArray<float> d_y(all.size() + 2 * off);
    d_y.poison();
    TestStream stream;
    cuda::cast(test::as_bf16(d_x.get()) + off, d_y.get() + off, static_cast<int64_t>(all.size()), stream.get());
    stream.sync();
    const std::vector<float> y = d_y.download();
    size_t mismatches = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = bf16_bits_to_float(all[i]);
      const float got = y[off + i];
      const bool ok = std::isnan(want) ? std::isnan(got) : std::memcmp(&want, &got, sizeof(float)) == 0;
      if (!ok && ++mismatches <= 4) ADD_FAILURE() << "bits 0x" << std::hex << all[i] << " -> " << got;
    }
    EXPECT_EQ(0u, mismatches);
    for (size_t i = 0; i < off; ++i) {
      EXPECT_TRUE(std::isnan(y[i]) && std::isnan(y[y.size() - 1 - i])) << "wrote outside y";
    }
  }
}

// ---------------------------------------------------------------- elementwise

using CpuOp = std::function<void(const float*, const float*, float*, int64_t)>;
using CudaOp = std::function<void(const bf16*, const bf16*, bf16*, int64_t, cudaStream_t)>;

struct ElementwiseOp {
  std::string name;
  bool exact;   // one fp32 operation: the CPU result rounded to bf16, bit for bit
  double atol;  // otherwise |got - ref| <= atol + kBf16Rtol |ref|
  std::function<std::vector<float>(size_t, uint32_t)> first_input;  // x, y or a
  CpuOp cpu;                                                        // (in0, in1, out, n); in1 unused if one input
  CudaOp cuda;
};

std::vector<float> normal_2(size_t n, uint32_t seed) { return test::random_normal(n, seed, 2.0f); }
std::vector<float> relu_outputs(size_t n, uint32_t seed) {
  auto v = test::random_normal(n, seed);
  for (float& x : v) x = x > 0.0f ? x : 0.0f;
  return v;
}
std::vector<float> tanh_outputs(size_t n, uint32_t seed) {  // many round to exactly +-1 in bf16
  auto v = test::random_normal(n, seed, 3.0f);
  for (float& x : v) x = std::tanh(x);
  return v;
}

std::vector<ElementwiseOp> elementwise_ops() {
  const float kScale = 0.7071f;
  return {
      {"gelu_forward", false, kBf16TranscendentalAtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::gelu_forward(x, y, n); },
       [](const bf16* x, const bf16*, bf16* y, int64_t n, cudaStream_t s) { cuda::gelu_forward(x, y, n, s); }},
      {"gelu_backward", false, kBf16TranscendentalAtol, normal_2,
       [](const float* x, const float* dy, float* dx, int64_t n) { cpu::gelu_backward(x, dy, dx, n); },
       [](const bf16* x, const bf16* dy, bf16* dx, int64_t n, cudaStream_t s) {
         cuda::gelu_backward(x, dy, dx, n, s);
       }},
      {"gelu_tanh_forward", false, kBf16TranscendentalAtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::gelu_tanh_forward(x, y, n); },
       [](const bf16* x, const bf16*, bf16* y, int64_t n, cudaStream_t s) { cuda::gelu_tanh_forward(x, y, n, s); }},
      {"gelu_tanh_backward", false, kBf16TranscendentalAtol, normal_2,
       [](const float* x, const float* dy, float* dx, int64_t n) { cpu::gelu_tanh_backward(x, dy, dx, n); },
       [](const bf16* x, const bf16* dy, bf16* dx, int64_t n, cudaStream_t s) {
         cuda::gelu_tanh_backward(x, dy, dx, n, s);
       }},
      {"relu_forward", true, 0.0, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::relu_forward(x, y, n); },
       [](const bf16* x, const bf16*, bf16* y, int64_t n, cudaStream_t s) { cuda::relu_forward(x, y, n, s); }},
      {"relu_backward", true, 0.0, relu_outputs,
       [](const float* y, const float* dy, float* dx, int64_t n) { cpu::relu_backward(y, dy, dx, n); },
       [](const bf16* y, const bf16* dy, bf16* dx, int64_t n, cudaStream_t s) {
         cuda::relu_backward(y, dy, dx, n, s);
       }},
      {"tanh_forward", false, kBf16TranscendentalAtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::tanh_forward(x, y, n); },
       [](const bf16* x, const bf16*, bf16* y, int64_t n, cudaStream_t s) { cuda::tanh_forward(x, y, n, s); }},
      {"tanh_backward", false, kBf16PolynomialAtol, tanh_outputs,
       [](const float* y, const float* dy, float* dx, int64_t n) { cpu::tanh_backward(y, dy, dx, n); },
       [](const bf16* y, const bf16* dy, bf16* dx, int64_t n, cudaStream_t s) {
         cuda::tanh_backward(y, dy, dx, n, s);
       }},
      {"add_forward", true, 0.0, normal_2,
       [](const float* a, const float* b, float* y, int64_t n) { cpu::add_forward(a, b, y, n); },
       [](const bf16* a, const bf16* b, bf16* y, int64_t n, cudaStream_t s) { cuda::add_forward(a, b, y, n, s); }},
      {"scale_forward", true, 0.0, normal_2,
       [kScale](const float* x, const float*, float* y, int64_t n) { cpu::scale_forward(x, y, n, kScale); },
       [kScale](const bf16* x, const bf16*, bf16* y, int64_t n, cudaStream_t s) {
         cuda::scale_forward(x, y, n, kScale, s);
       }},
  };
}

// Sizes: 8-element vectors + a tail of 3, vectors only, tail only. Offsets in elements of (inputs, output):
// aligned; all one element off (scalar path); output only; 8 elements = 16 bytes off (vector path again).
TEST(CudaBf16Elementwise, OpsMatchCpuOnRoundedInputs) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t sizes[] = {1000003, 4096, 7};
  const size_t offsets[][2] = {{0, 0}, {1, 1}, {0, 1}, {8, 8}};
  uint32_t seed = 1300;
  for (const ElementwiseOp& op : elementwise_ops())
    for (size_t n : sizes)
      for (const auto& off : offsets) {
        SCOPED_TRACE(op.name + " n=" + std::to_string(n) + " offset in=" + std::to_string(off[0]) +
                     " out=" + std::to_string(off[1]));
        const test::Bf16Tensor in0 = test::round_to_bf16(op.first_input(n, seed++));
        const test::Bf16Tensor in1 = test::round_to_bf16(test::random_normal(n, seed++));  // dy or b
        ASSERT_GT(test::l2_norm(in0.values), 0.0);
        std::vector<float> reference = test::poisoned(n);
        op.cpu(in0.values.data(), in1.values.data(), reference.data(), static_cast<int64_t>(n));

        CudaArray<uint16_t> d_in0(test::with_margins(in0.bits, off[0], 0));
        CudaArray<uint16_t> d_in1(test::with_margins(in1.bits, off[0], 0));
        CudaArray<uint16_t> d_out(n + 2 * off[1]);
        d_out.poison();
        TestStream stream;
        op.cuda(test::as_bf16(d_in0.get()) + off[0], test::as_bf16(d_in1.get()) + off[0],
                test::as_bf16(d_out.get()) + off[1], static_cast<int64_t>(n), stream.get());
        stream.sync();
        const std::vector<uint16_t> got = view(d_out.download(), off[1], off[1]);
        if (n > 1000) {  // tiny sizes may be all 0 (ReLU)
          EXPECT_GT(test::l2_norm(test::widen(got)), 0.0);
        }
        if (op.exact) {
          expect_bits(got, test::bf16_bits_of(reference), op.name);
        } else {
          expect_close(got, reference, op.atol, kBf16Rtol, op.name);
        }
      }
}

// y may be x (and for add, y may be a): each element is read before it is written.
TEST(CudaBf16Elementwise, OpsInPlace) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t n = 100003;
  const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(n, 1500, 2.0f));
  const test::Bf16Tensor b = test::round_to_bf16(test::random_normal(n, 1501));
  TestStream stream;
  {
    std::vector<float> reference = x.values;
    cpu::gelu_forward(reference.data(), reference.data(), static_cast<int64_t>(n));
    CudaArray<uint16_t> d_x(x.bits);
    cuda::gelu_forward(test::as_bf16(d_x.get()), test::as_bf16(d_x.get()), static_cast<int64_t>(n), stream.get());
    stream.sync();
    expect_close(d_x.download(), reference, kBf16TranscendentalAtol, kBf16Rtol, "gelu_forward in place");
  }
  {
    std::vector<float> reference = x.values;
    cpu::add_forward(reference.data(), b.values.data(), reference.data(), static_cast<int64_t>(n));
    CudaArray<uint16_t> d_a(x.bits), d_b(b.bits);
    cuda::add_forward(test::as_bf16(d_a.get()), test::as_bf16(d_b.get()), test::as_bf16(d_a.get()),
                      static_cast<int64_t>(n), stream.get());
    stream.sync();
    expect_bits(d_a.download(), test::bf16_bits_of(reference), "add_forward in place");
  }
}

// ---------------------------------------------------------------- bias

TEST(CudaBf16Bias, AddForwardIsTheRoundedCpuSum) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // cols % 8 == 0 takes the vector path (8 bf16 of x, 8 floats of bias), the others the scalar one.
  const int64_t shapes[][2] = {{37, 29}, {64, 768}, {3, 8}, {1000, 1}, {5, 12}};
  uint32_t seed = 900;
  for (const auto& s : shapes)
    for (size_t off : {0, 1, 8}) {  // in elements, applied to x and bias: 1 forces the scalar path
      const int64_t rows = s[0], cols = s[1];
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " offset=" + std::to_string(off));
      const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(static_cast<size_t>(rows * cols), seed++));
      const std::vector<float> bias = test::random_normal(static_cast<size_t>(cols), seed++);  // fp32 parameter
      ASSERT_GT(test::l2_norm(x.values), 0.0);
      ASSERT_GT(test::l2_norm(bias), 0.0);
      std::vector<float> reference = x.values;
      cpu::bias_add_forward(reference.data(), bias.data(), rows, cols);

      std::vector<float> bias_host(off, 0.0f);
      bias_host.insert(bias_host.end(), bias.begin(), bias.end());
      CudaArray<uint16_t> d_x(test::with_margins(x.bits, off, off));  // the margins must stay poisoned
      CudaArray<float> d_bias(bias_host);
      TestStream stream;
      cuda::bias_add_forward(test::as_bf16(d_x.get()) + off, d_bias.get() + off, rows, cols, stream.get());
      stream.sync();
      expect_bits(view(d_x.download(), off, off), test::bf16_bits_of(reference),
                             "bias_add_forward");
    }
}

TEST(CudaBf16Bias, BackwardMatchesDoubleColumnSums) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // The last three: rows of 2 and 3 bf16 vectors (StyleGAN's 16-channel layers; 24 channels) and a scalar
  // row of 5, each over enough rows for the full chunk count.
  const int64_t shapes[][2] = {{4096, 768}, {37, 29}, {1000, 1}, {129, 33}, {1 << 20, 16}, {200000, 24},
                               {100003, 5}};
  uint32_t seed = 1100;
  for (const auto& s : shapes) {
    const int64_t rows = s[0], cols = s[1];
    SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
    const test::Bf16Tensor dy = test::round_to_bf16(test::random_normal(static_cast<size_t>(rows * cols), seed++));
    ASSERT_GT(test::l2_norm(dy.values), 0.0);
    std::vector<float> reference = test::poisoned(static_cast<size_t>(cols));
    cpu::bias_backward(dy.values.data(), reference.data(), rows, cols);

    CudaArray<uint16_t> d_dy(dy.bits);
    CudaArray<float> d_dbias(static_cast<size_t>(cols) + 1);
    d_dbias.poison();
    TestStream stream;
    cuda::bias_backward(test::as_bf16(d_dy.get()), d_dbias.get(), rows, cols, stream.get());
    stream.sync();
    const std::vector<float> all = d_dbias.download();
    const std::vector<float> got(all.begin(), all.begin() + cols);
    EXPECT_TRUE(std::isnan(all.back())) << "wrote past dbias";
    EXPECT_EQ(0u, test::count_unwritten(got));
    EXPECT_GT(test::l2_norm(got), 0.0);
    const auto c = test::compare_close(got, test::to_double(reference), kBiasSumAtol, kBiasSumRtol);
    EXPECT_TRUE(c.ok()) << c.description;

    d_dbias.poison();  // deterministic: a second run gives the same bits
    cuda::bias_backward(test::as_bf16(d_dy.get()), d_dbias.get(), rows, cols, stream.get());
    stream.sync();
    EXPECT_EQ(0, std::memcmp(all.data(), d_dbias.download().data(), sizeof(float) * static_cast<size_t>(cols)));
  }
}

// ---------------------------------------------------------------- dropout

// Masks identical to the CPU's, y and dx the CPU's fp32 products rounded to bf16, for partial last Philox
// groups and offsets of 1 element (scalar path) and 4 elements (8 bytes: the bf16 group path off 16 bytes).
TEST(CudaBf16Dropout, ForwardAndBackwardMatchTheCpuBitForBit) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Draw {
    float p;
    uint64_t seed, offset;
  };
  const Draw draws[] = {{0.1f, 0x123456789abcdef0ull, 0}, {0.3f, 0xdeadbeefcafef00dull, ~uint64_t{0} - 5}};
  const size_t sizes[] = {1000003, 4096, 7};
  uint32_t seed = 1700;
  for (const Draw& d : draws)
    for (size_t n : sizes)
      for (size_t off : {0, 1, 4}) {  // elements of x, y, dy, dx and bytes of the mask
        SCOPED_TRACE("p=" + std::to_string(d.p) + " n=" + std::to_string(n) + " offset=" + std::to_string(off));
        const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(n, seed++));
        const test::Bf16Tensor dy = test::round_to_bf16(test::random_normal(n, seed++));
        std::vector<float> y_ref = test::poisoned(n), dx_ref = test::poisoned(n);
        std::vector<uint8_t> mask_ref(n, 0xAB);
        cpu::dropout_forward(x.values.data(), y_ref.data(), mask_ref.data(), static_cast<int64_t>(n), d.p, d.seed,
                             d.offset);
        cpu::dropout_backward(dy.values.data(), mask_ref.data(), dx_ref.data(), static_cast<int64_t>(n), d.p);
        size_t kept = 0;
        for (uint8_t m : mask_ref) kept += m;
        if (n > 1000) {  // non-vacuous: some dropped, some kept
          EXPECT_GT(kept, 0u);
          EXPECT_LT(kept, n);
        }

        CudaArray<uint16_t> d_x(test::with_margins(x.bits, off, 0)), d_dy(test::with_margins(dy.bits, off, 0));
        CudaArray<uint16_t> d_y(n + 2 * off), d_dx(n + 2 * off);
        CudaArray<uint8_t> d_mask(n + 2 * off);
        d_y.poison();
        d_dx.poison();
        d_mask.poison();
        TestStream stream;
        cuda::dropout_forward(test::as_bf16(d_x.get()) + off, test::as_bf16(d_y.get()) + off, d_mask.get() + off,
                              static_cast<int64_t>(n), d.p, d.seed, cuda::eager_value(static_cast<int64_t>(d.offset)),
                              stream.get());
        // Backward from the GPU's own mask.
        cuda::dropout_backward(test::as_bf16(d_dy.get()) + off, d_mask.get() + off, test::as_bf16(d_dx.get()) + off,
                               static_cast<int64_t>(n), d.p, stream.get());
        stream.sync();
        const std::vector<uint8_t> mask_all = d_mask.download();
        EXPECT_TRUE(std::vector<uint8_t>(mask_all.begin() + off, mask_all.begin() + off + n) == mask_ref)
            << "masks differ";
        for (size_t i = 0; i < off; ++i) {
          EXPECT_EQ(0xFF, mask_all[i]) << "wrote before the mask";
          EXPECT_EQ(0xFF, mask_all[mask_all.size() - 1 - i]) << "wrote after the mask";
        }
        expect_bits(view(d_y.download(), off, off), test::bf16_bits_of(y_ref), "y");
        expect_bits(view(d_dx.download(), off, off), test::bf16_bits_of(dx_ref), "dx");
        if (n > 1000) {
          EXPECT_GT(test::l2_norm(dx_ref), 0.0);
        }
      }
}

TEST(CudaBf16Dropout, InPlace) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t n = 100001;
  const float p = 0.2f;
  const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(n, 1900));
  std::vector<float> y_ref = x.values;
  std::vector<uint8_t> mask_ref(n, 0xAB);
  cpu::dropout_forward(y_ref.data(), y_ref.data(), mask_ref.data(), static_cast<int64_t>(n), p, 99, 1000);
  CudaArray<uint16_t> d_x(x.bits);
  CudaArray<uint8_t> d_mask(n);
  d_mask.poison();
  TestStream stream;
  cuda::dropout_forward(test::as_bf16(d_x.get()), test::as_bf16(d_x.get()), d_mask.get(), static_cast<int64_t>(n), p,
                        99, cuda::eager_value(1000), stream.get());
  stream.sync();
  EXPECT_TRUE(d_mask.download() == mask_ref);
  expect_bits(d_x.download(), test::bf16_bits_of(y_ref), "dropout in place");
}

// ---------------------------------------------------------------- layout

TEST(CudaBf16Layout, AddBroadcastIsTheRoundedCpuSum) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Shape {
    int64_t repeats, block;
  };
  // Scalar path (odd block; block % 8 == 4), vector path (positions of 512 tokens x 768).
  for (const Shape s : {Shape{37, 769}, Shape{5, 12}, Shape{8, 512 * 768}}) {
    SCOPED_TRACE(std::to_string(s.repeats) + " x " + std::to_string(s.block));
    const size_t n = static_cast<size_t>(s.repeats * s.block);
    const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(n, 11));
    const std::vector<float> table = test::random_normal(static_cast<size_t>(s.block), 12);  // fp32 parameter
    std::vector<float> ref(n);
    cpu::add_broadcast_forward(x.values.data(), table.data(), ref.data(), s.repeats, s.block);
    CudaArray<uint16_t> d_x(x.bits), d_y(n);
    CudaArray<float> d_table(table);
    d_y.poison();
    TestStream stream;
    cuda::add_broadcast_forward(test::as_bf16(d_x.get()), d_table.get(), test::as_bf16(d_y.get()), s.repeats, s.block,
                                stream.get());
    stream.sync();
    const std::vector<uint16_t> want = test::bf16_bits_of(ref);
    EXPECT_GT(test::l2_norm(ref), 0.0);
    expect_bits(d_y.download(), want, "add_broadcast_forward");
    // In place (y == x), as the executor may run it.
    cuda::add_broadcast_forward(test::as_bf16(d_x.get()), d_table.get(), test::as_bf16(d_x.get()), s.repeats, s.block,
                                stream.get());
    stream.sync();
    expect_bits(d_x.download(), want, "add_broadcast_forward in place");
  }
}

TEST(CudaBf16Layout, SwapMiddleIsExactAndItsOwnInverse) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Shape {
    int64_t a, b, c, d;
  };
  // Odd d and d = 4 (scalar path for bf16), BERT heads (8, 128, 12, 64) and d = 8 (one 16-byte vector per run).
  for (const Shape s : {Shape{2, 37, 5, 13}, Shape{3, 7, 9, 4}, Shape{8, 128, 12, 64}, Shape{3, 7, 9, 8}}) {
    SCOPED_TRACE(std::to_string(s.a) + "," + std::to_string(s.b) + "," + std::to_string(s.c) + "," +
                 std::to_string(s.d));
    const size_t n = static_cast<size_t>(s.a * s.b * s.c * s.d);
    const test::Bf16Tensor x = test::round_to_bf16(test::random_normal(n, 21));
    std::vector<float> ref(n);
    cpu::swap_middle(x.values.data(), ref.data(), s.a, s.b, s.c, s.d);
    CudaArray<uint16_t> d_x(x.bits), d_y(n), d_back(n);
    d_y.poison();
    d_back.poison();
    TestStream stream;
    cuda::swap_middle(test::as_bf16(d_x.get()), test::as_bf16(d_y.get()), s.a, s.b, s.c, s.d, stream.get());
    cuda::swap_middle(test::as_bf16(d_y.get()), test::as_bf16(d_back.get()), s.a, s.c, s.b, s.d, stream.get());
    stream.sync();
    expect_bits(d_y.download(), test::bf16_bits_of(ref), "swap_middle");
    expect_bits(d_back.download(), x.bits, "round trip");
  }
}

}  // namespace
}  // namespace sb
