// sb::cuda dense and elementwise kernels (src/cuda/{gemm,bias,activations,dropout}) against the CPU reference
// (src/cpu, same names and arguments) on fresh random data: every GEMM transpose setting, odd sizes, padded
// leading dimensions, batches with a shared (stride 0) operand, k = 0; float4 kernels at sizes that are not
// multiples of 4 and on pointers one float off 16-byte alignment; Philox dropout masks bit for bit.
// Outputs are poisoned (0xFF bytes: NaN floats, 255 mask bytes) before each kernel, and bytes just outside
// an output are checked untouched. Skips when no GPU is visible.
// Run: build/tests/gpu_tests --gtest_filter='CudaDense*'
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/activations.h"
#include "src/cpu/bias.h"
#include "src/cpu/dropout.h"
#include "src/cpu/gemm.h"
#include "src/cuda/activations.h"
#include "src/cuda/bias.h"
#include "src/cuda/dropout.h"
#include "src/cuda/gemm.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

// ---------------------------------------------------------------- tolerances
// Small-integer GEMM data (|entries| <= 4, k <= 1024): every product and partial sum is an integer below
// 2^24, alpha and beta are multiples of 1/2, so every reduction order gives the exact result: no tolerance.
constexpr double kExact = 0.0;
// Normal-data fp32 GEMM: fp32 accumulation error grows like u * k for N(0, 1) entries (partial sums of size
// sqrt(p), k of them); we allow 1e-5 * sqrt(k) absolute and relative, about 5x the worst element seen in
// such sums at k = 1024 and 25x at k = 53, yet 10-50x below what TF32 inputs (2^-11 rounding per input)
// would produce: the test catches a TF32 path.
double gemm_fp32_tolerance(int64_t k) { return 1e-5 * std::sqrt(static_cast<double>(k)); }
// bias_backward: both sides sum in double, so only the final fp32 rounding may differ (1 ulp, < 1.2e-7
// relative); 1e-6 relative leaves margin, 1e-8 absolute covers double-order noise on sums that cancel.
constexpr double kBiasSumRtol = 1e-6;
constexpr double kBiasSumAtol = 1e-8;
// fp32 transcendentals (erfcf, expf, tanhf: 2-4 ulp, plus fp32 rounding of their arguments) against the
// CPU's double evaluation: 1e-5 relative; 1e-6 absolute for outputs near a zero of the function (the GELU
// derivatives cross 0 near x = -0.75, where O(0.2) terms cancel, each a few ulp off, times |dy| <= ~5).
constexpr double kTranscendentalRtol = 1e-5;
constexpr double kTranscendentalAtol = 1e-6;
// tanh backward, dy (1 - y)(1 + y) in fp32: at most a few roundings, no cancellation.
constexpr double kPolynomialRtol = 1e-6;

// ---------------------------------------------------------------- device helpers

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " -> " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
  }
}

// A stream for one test; every copy and kernel of the test goes on it, in order.
class Stream {
 public:
  Stream() { cuda_ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void sync() const {
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda_ok(cudaGetLastError(), "cudaGetLastError");
  }

 private:
  cudaStream_t stream_ = nullptr;
};

// `count` elements of T on the device (cudaMalloc: 256-byte aligned, so data() + 1 is misaligned for float4).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t count) : count_(count) {
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&data_), (count > 0 ? count : 1) * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() const { return data_; }
  void upload(const std::vector<T>& host, const Stream& stream, size_t at = 0) {
    if (at + host.size() > count_) throw std::runtime_error("DeviceArray::upload out of range");
    cuda_ok(cudaMemcpyAsync(data_ + at, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice,
                            stream.get()),
            "cudaMemcpyAsync H2D");
    stream.sync();  // the host vector may go away after this call
  }
  void poison(const Stream& stream) {
    cuda_ok(cudaMemsetAsync(data_, 0xFF, count_ * sizeof(T), stream.get()), "cudaMemsetAsync");
  }
  std::vector<T> download(const Stream& stream) const {
    std::vector<T> host(count_);
    cuda_ok(cudaMemcpyAsync(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost, stream.get()),
            "cudaMemcpyAsync D2H");
    stream.sync();
    return host;
  }

 private:
  size_t count_;
  T* data_ = nullptr;
};

std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

bool is_poison(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits == 0xFFFFFFFFu;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Nonzero integers in [-4, 4] (never zeros, STYLE.md rule 4).
std::vector<float> small_integers(size_t count, uint32_t seed) {
  const std::vector<int32_t> ids = test::random_ids(count, seed, -4, 3);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>(ids[i] >= 0 ? ids[i] + 1 : ids[i]);
  return values;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 777.0f;  // in C's padding and between batch entries: must survive unchanged

// ---------------------------------------------------------------- GEMM

struct GemmCase {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad = 0;  // extra columns after every stored row of A, B and C
  int64_t batch = 1;
  bool share_a = false, share_b = false;  // stride 0 for that operand
  bool integers = true;

  std::string label() const {
    return std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
           " k=" + std::to_string(k) + " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) +
           " pad=" + std::to_string(pad) + " batch=" + std::to_string(batch) + (share_a ? " shared A" : "") +
           (share_b ? " shared B" : "") + (integers ? " integers" : " normal");
  }
};

// A stored (rows, cols) matrix with leading dimension cols + pad, `copies` of them `stride` apart; the padding
// and the gaps hold `filler`.
std::vector<float> stored_operand(int64_t rows, int64_t cols, int64_t pad, int64_t copies, int64_t stride,
                                  bool integers, uint32_t seed, float filler) {
  const int64_t ld = cols + pad;
  const int64_t total = copies <= 1 ? rows * ld : (copies - 1) * stride + rows * ld;
  std::vector<float> data(static_cast<size_t>(total), filler);
  const std::vector<float> values = integers ? small_integers(static_cast<size_t>(copies * rows * cols), seed)
                                             : test::random_normal(static_cast<size_t>(copies * rows * cols), seed);
  size_t next = 0;
  for (int64_t g = 0; g < copies; ++g)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) data[static_cast<size_t>(g * stride + r * ld + c)] = values[next++];
  return data;
}

// The logical elements of such a buffer, without padding and gaps.
std::vector<float> logical(const std::vector<float>& data, int64_t rows, int64_t cols, int64_t ld, int64_t copies,
                           int64_t stride) {
  std::vector<float> values;
  for (int64_t g = 0; g < copies; ++g)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) values.push_back(data[static_cast<size_t>(g * stride + r * ld + c)]);
  return values;
}

// Runs one case on both devices and compares the whole C buffer (padding and gaps included). One stream per
// test, not per case: cuda::gemm keeps a cuBLASLt workspace per stream.
void check_gemm(const GemmCase& t, uint32_t seed, const Stream& stream) {
  SCOPED_TRACE(t.label());
  const int64_t a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const int64_t b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  const int64_t lda = a_cols + t.pad, ldb = b_cols + t.pad, ldc = t.n + t.pad;
  const int64_t gap = 3;  // elements between consecutive batch entries
  const int64_t stride_a = t.share_a ? 0 : a_rows * lda + gap;
  const int64_t stride_b = t.share_b ? 0 : b_rows * ldb + gap;
  const int64_t stride_c = t.m * ldc + gap;
  const int64_t copies_a = t.share_a ? 1 : t.batch, copies_b = t.share_b ? 1 : t.batch;

  // NaN in the operands' padding: reading it would poison the result.
  const auto a = stored_operand(a_rows, a_cols, t.pad, copies_a, stride_a, t.integers, seed, kNaN);
  const auto b = stored_operand(b_rows, b_cols, t.pad, copies_b, stride_b, t.integers, seed + 1, kNaN);
  auto c_in = stored_operand(t.m, t.n, t.pad, t.batch, stride_c, t.integers, seed + 2, kSentinel);
  if (t.beta == 0.0f) {  // beta 0 must not read C: NaN in every element it overwrites
    for (int64_t g = 0; g < t.batch; ++g)
      for (int64_t r = 0; r < t.m; ++r)
        for (int64_t col = 0; col < t.n; ++col) c_in[static_cast<size_t>(g * stride_c + r * ldc + col)] = kNaN;
  }
  if (t.k > 0) {  // non-vacuous inputs (the padding is NaN, so only the logical elements count)
    ASSERT_GT(test::l2_norm(logical(a, a_rows, a_cols, lda, copies_a, stride_a)), 0.0);
    ASSERT_GT(test::l2_norm(logical(b, b_rows, b_cols, ldb, copies_b, stride_b)), 0.0);
  }

  std::vector<float> reference = c_in;
  cpu::gemm_strided_batched(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta,
                            reference.data(), ldc, t.batch, stride_a, stride_b, stride_c);
  ASSERT_EQ(test::count_unwritten(reference), 0u) << "CPU reference left NaN";

  DeviceArray<float> a_dev(a.size()), b_dev(b.size()), c_dev(c_in.size());
  a_dev.upload(a, stream);
  b_dev.upload(b, stream);
  c_dev.upload(c_in, stream);
  if (t.batch == 1) {
    cuda::gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a_dev.data(), lda, b_dev.data(), ldb, t.beta, c_dev.data(), ldc,
               stream.get());
  } else {
    cuda::gemm_strided_batched(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a_dev.data(), lda, b_dev.data(), ldb, t.beta,
                               c_dev.data(), ldc, t.batch, stride_a, stride_b, stride_c, stream.get());
  }
  const std::vector<float> got = c_dev.download(stream);

  const double tolerance = t.integers ? kExact : gemm_fp32_tolerance(t.k);
  const double got_norm = test::l2_norm(logical(got, t.m, t.n, ldc, t.batch, stride_c));
  if (t.k == 0 && t.beta == 0.0f) {
    EXPECT_EQ(got_norm, 0.0);  // C = 0 exactly
  } else if (t.m * t.n * t.batch >= 16) {  // a handful of small-integer outputs may cancel to 0
    EXPECT_GT(got_norm, 0.0);
  }
  const auto comparison = test::compare_close(got, to_double(reference), tolerance, tolerance);
  EXPECT_TRUE(comparison.ok()) << comparison.description;
}

TEST(CudaDense, GemmAllTransposesExactOnSmallIntegers) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Stream stream;
  const int64_t shapes[][3] = {{37, 29, 53}, {1, 1, 1}, {64, 48, 32}, {5, 130, 7}, {128, 3, 257}};
  uint32_t seed = 100;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& s : shapes)
        for (int64_t pad : {0, 3}) {
          GemmCase t;
          t.ta = ta, t.tb = tb, t.m = s[0], t.n = s[1], t.k = s[2], t.pad = pad;
          t.alpha = 1.0f, t.beta = 0.0f;
          check_gemm(t, seed += 3, stream);
          t.alpha = 0.5f, t.beta = -1.5f;
          check_gemm(t, seed += 3, stream);
        }
}

// Random normal data: fp32 accumulation error only; a TF32 path would exceed the tolerance.
TEST(CudaDense, GemmNormalDataWithinFp32Tolerance) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Stream stream;
  const int64_t shapes[][3] = {{37, 29, 53}, {96, 80, 1024}};
  uint32_t seed = 300;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& s : shapes) {
        GemmCase t;
        t.ta = ta, t.tb = tb, t.m = s[0], t.n = s[1], t.k = s[2], t.integers = false;
        t.alpha = 1.0f, t.beta = 0.0f;
        check_gemm(t, seed += 3, stream);
        t.alpha = 0.75f, t.beta = 0.5f, t.pad = 5;
        check_gemm(t, seed += 3, stream);
      }
}

// One operand shared across the batch (stride 0): one weight for every head, say.
TEST(CudaDense, GemmStridedBatchedWithSharedOperand) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Stream stream;
  uint32_t seed = 500;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int sharing = 0; sharing < 3; ++sharing) {  // none, A, B
        GemmCase t;
        t.ta = ta, t.tb = tb, t.m = 37, t.n = 29, t.k = 53, t.batch = 4, t.pad = 2;
        t.share_a = sharing == 1, t.share_b = sharing == 2;
        t.alpha = 1.0f, t.beta = 0.0f;
        check_gemm(t, seed += 3, stream);
        t.alpha = -0.5f, t.beta = 2.0f;
        check_gemm(t, seed += 3, stream);
      }
}

// k == 0: C = beta C, and 0 (C unread) when beta is 0; single and batched.
TEST(CudaDense, GemmWithEmptyInnerDimensionScalesC) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Stream stream;
  uint32_t seed = 700;
  for (int64_t batch : {1, 3})
    for (float beta : {0.0f, -1.5f}) {
      GemmCase t;
      t.m = 7, t.n = 9, t.k = 0, t.pad = 1, t.batch = batch, t.alpha = 1.0f, t.beta = beta;
      check_gemm(t, seed += 3, stream);
    }
}

// ---------------------------------------------------------------- bias

TEST(CudaDense, BiasAddForwardIsBitIdentical) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t shapes[][2] = {{37, 29}, {64, 768}, {3, 4}, {1000, 1}};
  uint32_t seed = 900;
  for (const auto& s : shapes)
    for (size_t misalign : {0, 1}) {  // in floats, applied to x and bias: 1 forces the scalar path
      const int64_t rows = s[0], cols = s[1];
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                   " misalign=" + std::to_string(misalign));
      const auto x = test::random_normal(static_cast<size_t>(rows * cols), seed++);
      const auto bias = test::random_normal(static_cast<size_t>(cols), seed++);
      ASSERT_GT(test::l2_norm(x), 0.0);
      ASSERT_GT(test::l2_norm(bias), 0.0);
      std::vector<float> reference = x;
      cpu::bias_add_forward(reference.data(), bias.data(), rows, cols);

      Stream stream;
      DeviceArray<float> x_dev(x.size() + 2 * misalign), bias_dev(bias.size() + misalign);
      x_dev.poison(stream);  // the element before and after the view must stay poisoned
      x_dev.upload(x, stream, misalign);
      bias_dev.upload(bias, stream, misalign);
      cuda::bias_add_forward(x_dev.data() + misalign, bias_dev.data() + misalign, rows, cols, stream.get());
      const auto all = x_dev.download(stream);
      const std::vector<float> got(all.begin() + misalign, all.begin() + misalign + x.size());
      EXPECT_TRUE(same_bits(got, reference));
      const auto comparison = test::compare_close(got, to_double(reference), kExact, kExact);
      EXPECT_TRUE(comparison.ok()) << comparison.description;
      for (size_t i = 0; i < misalign; ++i) {
        EXPECT_TRUE(is_poison(all[i]));
        EXPECT_TRUE(is_poison(all[all.size() - 1 - i]));
      }
    }
}

TEST(CudaDense, BiasBackwardMatchesDoubleColumnSums) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // The last three: rows narrower than a warp of column slots (16 columns: 4 float vectors a row, 3: scalar
  // with 10 rows per warp) over enough rows for the full chunk count.
  const int64_t shapes[][2] = {{4096, 768}, {37, 29}, {3, 100}, {1000, 1}, {129, 33}, {1 << 20, 16}, {300001, 3},
                               {70000, 40}};
  uint32_t seed = 1100;
  for (const auto& s : shapes) {
    const int64_t rows = s[0], cols = s[1];
    SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
    const auto dy = test::random_normal(static_cast<size_t>(rows * cols), seed++);
    ASSERT_GT(test::l2_norm(dy), 0.0);
    std::vector<float> reference = test::poisoned(static_cast<size_t>(cols));
    cpu::bias_backward(dy.data(), reference.data(), rows, cols);

    Stream stream;
    DeviceArray<float> dy_dev(dy.size()), dbias_dev(static_cast<size_t>(cols) + 1);
    dy_dev.upload(dy, stream);
    dbias_dev.poison(stream);
    cuda::bias_backward(dy_dev.data(), dbias_dev.data(), rows, cols, stream.get());
    const auto all = dbias_dev.download(stream);
    const std::vector<float> got(all.begin(), all.begin() + cols);
    EXPECT_TRUE(is_poison(all.back())) << "wrote past dbias";
    EXPECT_GT(test::l2_norm(got), 0.0);
    const auto comparison = test::compare_close(got, to_double(reference), kBiasSumAtol, kBiasSumRtol);
    EXPECT_TRUE(comparison.ok()) << comparison.description;

    // Deterministic: a second run gives the same bits.
    dbias_dev.poison(stream);
    cuda::bias_backward(dy_dev.data(), dbias_dev.data(), rows, cols, stream.get());
    const auto again = dbias_dev.download(stream);
    EXPECT_TRUE(same_bits(std::vector<float>(again.begin(), again.begin() + cols), got));
  }
}

// ---------------------------------------------------------------- elementwise

using CpuUnary = std::function<void(const float*, const float*, float*, int64_t)>;
using CudaUnary = std::function<void(const float*, const float*, float*, int64_t, cudaStream_t)>;

struct ElementwiseOp {
  std::string name;
  bool two_inputs;
  double atol, rtol;
  std::function<std::vector<float>(size_t, uint32_t)> first_input;  // x, y or a
  CpuUnary cpu;                                                     // (in0, in1, out, n); in1 unused if one input
  CudaUnary cuda;
};

std::vector<float> normal_2(size_t n, uint32_t seed) { return test::random_normal(n, seed, 2.0f); }
std::vector<float> relu_outputs(size_t n, uint32_t seed) {
  auto v = test::random_normal(n, seed);
  for (float& x : v) x = x > 0.0f ? x : 0.0f;
  return v;
}
std::vector<float> tanh_outputs(size_t n, uint32_t seed) {  // including values within an ulp of +-1
  auto v = test::random_normal(n, seed, 3.0f);
  for (float& x : v) x = std::tanh(x);
  return v;
}

std::vector<ElementwiseOp> elementwise_ops() {
  const float kScale = 0.7071f;
  return {
      {"gelu_forward", false, kTranscendentalAtol, kTranscendentalRtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::gelu_forward(x, y, n); },
       [](const float* x, const float*, float* y, int64_t n, cudaStream_t s) { cuda::gelu_forward(x, y, n, s); }},
      {"gelu_backward", true, kTranscendentalAtol, kTranscendentalRtol, normal_2,
       [](const float* x, const float* dy, float* dx, int64_t n) { cpu::gelu_backward(x, dy, dx, n); },
       [](const float* x, const float* dy, float* dx, int64_t n, cudaStream_t s) {
         cuda::gelu_backward(x, dy, dx, n, s);
       }},
      {"gelu_tanh_forward", false, kTranscendentalAtol, kTranscendentalRtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::gelu_tanh_forward(x, y, n); },
       [](const float* x, const float*, float* y, int64_t n, cudaStream_t s) {
         cuda::gelu_tanh_forward(x, y, n, s);
       }},
      {"gelu_tanh_backward", true, kTranscendentalAtol, kTranscendentalRtol, normal_2,
       [](const float* x, const float* dy, float* dx, int64_t n) { cpu::gelu_tanh_backward(x, dy, dx, n); },
       [](const float* x, const float* dy, float* dx, int64_t n, cudaStream_t s) {
         cuda::gelu_tanh_backward(x, dy, dx, n, s);
       }},
      {"relu_forward", false, kExact, kExact, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::relu_forward(x, y, n); },
       [](const float* x, const float*, float* y, int64_t n, cudaStream_t s) { cuda::relu_forward(x, y, n, s); }},
      {"relu_backward", true, kExact, kExact, relu_outputs,
       [](const float* y, const float* dy, float* dx, int64_t n) { cpu::relu_backward(y, dy, dx, n); },
       [](const float* y, const float* dy, float* dx, int64_t n, cudaStream_t s) {
         cuda::relu_backward(y, dy, dx, n, s);
       }},
      {"tanh_forward", false, kTranscendentalAtol, kTranscendentalRtol, normal_2,
       [](const float* x, const float*, float* y, int64_t n) { cpu::tanh_forward(x, y, n); },
       [](const float* x, const float*, float* y, int64_t n, cudaStream_t s) { cuda::tanh_forward(x, y, n, s); }},
      {"tanh_backward", true, kExact, kPolynomialRtol, tanh_outputs,
       [](const float* y, const float* dy, float* dx, int64_t n) { cpu::tanh_backward(y, dy, dx, n); },
       [](const float* y, const float* dy, float* dx, int64_t n, cudaStream_t s) {
         cuda::tanh_backward(y, dy, dx, n, s);
       }},
      {"add_forward", true, kExact, kExact, normal_2,
       [](const float* a, const float* b, float* y, int64_t n) { cpu::add_forward(a, b, y, n); },
       [](const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { cuda::add_forward(a, b, y, n, s); }},
      {"scale_forward", false, kExact, kExact, normal_2,
       [kScale](const float* x, const float*, float* y, int64_t n) { cpu::scale_forward(x, y, n, kScale); },
       [kScale](const float* x, const float*, float* y, int64_t n, cudaStream_t s) {
         cuda::scale_forward(x, y, n, kScale, s);
       }},
  };
}

// Sizes: float4 body + tail, float4 only, tail only. Misalignment in floats of (inputs, output): aligned,
// all one float off, output only.
TEST(CudaDense, ElementwiseOpsMatchCpu) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t sizes[] = {1000003, 4096, 3};
  const size_t misalignments[][2] = {{0, 0}, {1, 1}, {0, 1}};
  uint32_t seed = 1300;
  for (const ElementwiseOp& op : elementwise_ops())
    for (size_t n : sizes)
      for (const auto& mis : misalignments) {
        SCOPED_TRACE(op.name + " n=" + std::to_string(n) + " misalign in=" + std::to_string(mis[0]) +
                     " out=" + std::to_string(mis[1]));
        const auto in0 = op.first_input(n, seed++);
        const auto in1 = test::random_normal(n, seed++);  // dy or b; unused by one-input ops
        ASSERT_GT(test::l2_norm(in0), 0.0);
        std::vector<float> reference = test::poisoned(n);
        op.cpu(in0.data(), in1.data(), reference.data(), static_cast<int64_t>(n));

        Stream stream;
        DeviceArray<float> in0_dev(n + mis[0]), in1_dev(n + mis[0]), out_dev(n + 2 * mis[1]);
        in0_dev.upload(in0, stream, mis[0]);
        in1_dev.upload(in1, stream, mis[0]);
        out_dev.poison(stream);
        op.cuda(in0_dev.data() + mis[0], in1_dev.data() + mis[0], out_dev.data() + mis[1], static_cast<int64_t>(n),
                stream.get());
        const auto all = out_dev.download(stream);
        const std::vector<float> got(all.begin() + mis[1], all.begin() + mis[1] + n);
        if (n > 1000) {  // tiny sizes may legitimately be all 0
          EXPECT_GT(test::l2_norm(reference), 0.0);
        }
        const auto comparison = test::compare_close(got, to_double(reference), op.atol, op.rtol);
        EXPECT_TRUE(comparison.ok()) << comparison.description;
        if (op.atol == kExact && op.rtol == kExact) {
          EXPECT_TRUE(same_bits(got, reference));
        }
        for (size_t i = 0; i < mis[1]; ++i) {
          EXPECT_TRUE(is_poison(all[i])) << "wrote before the output";
          EXPECT_TRUE(is_poison(all[all.size() - 1 - i])) << "wrote after the output";
        }
      }
}

// y may be x (and for add, y may be a): each element is read before it is written.
TEST(CudaDense, ElementwiseOpsInPlace) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t n = 100003;
  const auto x = test::random_normal(n, 1500, 2.0f);
  const auto b = test::random_normal(n, 1501);
  Stream stream;
  {
    std::vector<float> reference = x;
    cpu::gelu_forward(reference.data(), reference.data(), static_cast<int64_t>(n));
    DeviceArray<float> x_dev(n);
    x_dev.upload(x, stream);
    cuda::gelu_forward(x_dev.data(), x_dev.data(), static_cast<int64_t>(n), stream.get());
    const auto comparison =
        test::compare_close(x_dev.download(stream), to_double(reference), kTranscendentalAtol, kTranscendentalRtol);
    EXPECT_TRUE(comparison.ok()) << "gelu_forward in place: " << comparison.description;
  }
  {
    std::vector<float> reference = x;
    cpu::add_forward(reference.data(), b.data(), reference.data(), static_cast<int64_t>(n));
    DeviceArray<float> a_dev(n), b_dev(n);
    a_dev.upload(x, stream);
    b_dev.upload(b, stream);
    cuda::add_forward(a_dev.data(), b_dev.data(), a_dev.data(), static_cast<int64_t>(n), stream.get());
    EXPECT_TRUE(same_bits(a_dev.download(stream), reference)) << "add_forward in place";
  }
}

// ---------------------------------------------------------------- dropout

// Masks identical and outputs bit-identical to the CPU for several (p, seed, offset), sizes with partial last
// Philox blocks, misaligned x / y (one float) and mask (one byte), an offset whose blocks wrap past 2^64.
TEST(CudaDense, DropoutForwardAndBackwardAreBitIdentical) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  struct Draw {
    float p;
    uint64_t seed, offset;
  };
  const Draw draws[] = {{0.1f, 0x123456789abcdef0ull, 0},
                        {0.5f, 7, 0xfffffffdull},                  // blocks cross the counter's 32-bit boundary
                        {0.3f, 0xdeadbeefcafef00dull, ~uint64_t{0} - 5},  // and wrap modulo 2^64
                        {0.0f, 11, 12345}};
  const size_t sizes[] = {1000003, 4096, 7};
  uint32_t seed = 1700;
  for (const Draw& d : draws)
    for (size_t n : sizes)
      for (size_t misalign : {0, 1}) {  // x, y one float off and mask one byte off
        SCOPED_TRACE("p=" + std::to_string(d.p) + " seed=" + std::to_string(d.seed) +
                     " offset=" + std::to_string(d.offset) + " n=" + std::to_string(n) +
                     " misalign=" + std::to_string(misalign));
        const auto x = test::random_normal(n, seed++);
        const auto dy = test::random_normal(n, seed++);
        std::vector<float> y_ref = test::poisoned(n);
        std::vector<uint8_t> mask_ref(n, 0xAB);
        cpu::dropout_forward(x.data(), y_ref.data(), mask_ref.data(), static_cast<int64_t>(n), d.p, d.seed, d.offset);
        std::vector<float> dx_ref = test::poisoned(n);
        cpu::dropout_backward(dy.data(), mask_ref.data(), dx_ref.data(), static_cast<int64_t>(n), d.p);
        size_t kept = 0;
        for (uint8_t m : mask_ref) kept += m;
        if (d.p == 0.0f) {
          EXPECT_EQ(kept, n);
        } else if (n > 1000) {  // non-vacuous: some dropped, some kept
          EXPECT_GT(kept, 0u);
          EXPECT_LT(kept, n);
        }

        Stream stream;
        DeviceArray<float> x_dev(n + misalign), y_dev(n + misalign), dy_dev(n + misalign), dx_dev(n + misalign);
        DeviceArray<uint8_t> mask_dev(n + misalign);
        x_dev.upload(x, stream, misalign);
        dy_dev.upload(dy, stream, misalign);
        y_dev.poison(stream);
        mask_dev.poison(stream);
        dx_dev.poison(stream);
        cuda::dropout_forward(x_dev.data() + misalign, y_dev.data() + misalign, mask_dev.data() + misalign,
                              static_cast<int64_t>(n), d.p, d.seed, cuda::eager_value(static_cast<int64_t>(d.offset)),
                              stream.get());
        const auto mask_all = mask_dev.download(stream);
        const auto y_all = y_dev.download(stream);
        const std::vector<uint8_t> mask_got(mask_all.begin() + misalign, mask_all.end());
        const std::vector<float> y_got(y_all.begin() + misalign, y_all.end());
        EXPECT_TRUE(mask_got == mask_ref) << "masks differ";
        EXPECT_TRUE(same_bits(y_got, y_ref)) << "outputs differ: "
                                             << test::compare_close(y_got, to_double(y_ref), 0, 0).description;
        if (misalign > 0) {
          EXPECT_EQ(mask_all[0], 0xFF) << "wrote before the mask";
          EXPECT_TRUE(is_poison(y_all[0])) << "wrote before y";
        }

        // Backward from the GPU's own mask.
        cuda::dropout_backward(dy_dev.data() + misalign, mask_dev.data() + misalign, dx_dev.data() + misalign,
                               static_cast<int64_t>(n), d.p, stream.get());
        const auto dx_all = dx_dev.download(stream);
        const std::vector<float> dx_got(dx_all.begin() + misalign, dx_all.end());
        EXPECT_TRUE(same_bits(dx_got, dx_ref)) << "dx differs: "
                                               << test::compare_close(dx_got, to_double(dx_ref), 0, 0).description;
        if (n > 1000) {
          EXPECT_GT(test::l2_norm(dx_ref), 0.0);
        }
      }
}

// In place (y == x), as the engine may run it.
TEST(CudaDense, DropoutInPlace) {
  if (sb::visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const size_t n = 100001;
  const float p = 0.2f;
  const auto x = test::random_normal(n, 1900);
  std::vector<float> y_ref = x;
  std::vector<uint8_t> mask_ref(n, 0xAB);
  cpu::dropout_forward(y_ref.data(), y_ref.data(), mask_ref.data(), static_cast<int64_t>(n), p, 99, 1000);
  Stream stream;
  DeviceArray<float> x_dev(n);
  DeviceArray<uint8_t> mask_dev(n);
  x_dev.upload(x, stream);
  mask_dev.poison(stream);
  cuda::dropout_forward(x_dev.data(), x_dev.data(), mask_dev.data(), static_cast<int64_t>(n), p, 99,
                        cuda::eager_value(1000), stream.get());
  EXPECT_TRUE(mask_dev.download(stream) == mask_ref);
  EXPECT_TRUE(same_bits(x_dev.download(stream), y_ref));
}

}  // namespace
}  // namespace sb
