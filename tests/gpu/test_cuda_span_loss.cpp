// sb::cuda::span_loss_* and sb::cuda::select_column_* against the CPU reference on fresh random inputs: SQuAD's
// shape (48 x 384) with the labels HF has to fix up (past the end, exactly seq, negative), a side where every
// row is ignored, batch 0, and the bf16 instantiations (logits rounded to bf16 first, so both devices see the
// same values). Outputs are NaN-poisoned first. Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaSpanLoss*:CudaSelectColumn*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/half_precision.h"
#include "src/cpu/select_column.h"
#include "src/cpu/span_loss.h"
#include "src/cuda/element.h"
#include "src/cuda/select_column.h"
#include "src/cuda/span_loss.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;
using test::to_double;

// Tolerances (|got - ref| <= atol + rtol |ref|):
// Row losses and log-sum-exp: an fp32 sum of 384 exps (~1e-6 relative) against the CPU's fp64; losses ~6, so
// 1e-5 relative plus 1e-5 absolute is an order of magnitude of margin. The loss: fp64 means of those rows.
constexpr double kLossAtol = 1e-5;
constexpr double kLossRtol = 1e-5;
// dz = scale (p - onehot) with p = expf(z - lse) from the same saved log-sum-exp on both devices: expf's few
// ulps, ~1e-6 relative of p; where p - 1 cancels at the target, 1e-6 of scale absolute.
constexpr double kGradRtol = 1e-5;
constexpr double kGradAtolPerScale = 1e-6;
// bf16 gradients: the fp32 value rounded once on store, at most half a bf16 ulp (2^-9 relative); one ulp.
constexpr double kBf16StoreRtol = 1.0 / 256;

struct SpanInputs {
  int64_t batch, seq;
  std::vector<float> start_logits, end_logits;
  std::vector<int32_t> start_positions, end_positions;

  SpanInputs(int64_t b, int64_t s, uint32_t seed) : batch(b), seq(s) {
    start_logits = test::random_normal(static_cast<size_t>(b * s), seed, 2.0f);
    end_logits = test::random_normal(static_cast<size_t>(b * s), seed + 1, 2.0f);
    start_positions = test::random_ids(static_cast<size_t>(b), seed + 2, 0, static_cast<int32_t>(s - 1));
    end_positions = test::random_ids(static_cast<size_t>(b), seed + 3, 0, static_cast<int32_t>(s - 1));
  }
  void add_hf_fixups() {  // ignored past the end and at seq exactly; clamped to 0 when negative
    start_positions[1] = static_cast<int32_t>(seq + 16);
    end_positions[1] = 1 << 30;
    end_positions[2] = static_cast<int32_t>(seq);
    start_positions[3] = -5;
    end_positions[4] = -1;
  }
  void round_logits_to_bf16() {
    for (auto* v : {&start_logits, &end_logits}) {
      for (float& x : *v) x = bf16_bits_to_float(float_to_bf16_bits(x));
    }
  }
};

struct CpuSpanResult {
  std::vector<float> row_losses, logsumexp, dstart, dend;
  float loss = 0;
};

CpuSpanResult cpu_span_loss(const SpanInputs& in, float dloss) {
  CpuSpanResult r;
  r.row_losses.resize(2 * in.batch);
  r.logsumexp.resize(2 * in.batch);
  r.dstart.resize(in.batch * in.seq);
  r.dend.resize(in.batch * in.seq);
  cpu::span_loss_forward(in.start_logits.data(), in.end_logits.data(), in.start_positions.data(),
                         in.end_positions.data(), r.row_losses.data(), r.logsumexp.data(), &r.loss, in.batch, in.seq);
  cpu::span_loss_backward(in.start_logits.data(), in.end_logits.data(), in.start_positions.data(),
                          in.end_positions.data(), r.logsumexp.data(), r.dstart.data(), r.dend.data(), in.batch,
                          in.seq, dloss);
  return r;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bf16_bits(values[i]);
  return bits;
}

std::vector<float> from_bf16_bits(const std::vector<uint16_t>& bits) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = bf16_bits_to_float(bits[i]);
  return values;
}

// Device copies of the logits as T (float, or bf16 held as its bits) and the GPU results read back as float.
template <typename T>
struct GpuSpanRun {
  using Storage = std::conditional_t<std::is_same_v<T, float>, float, uint16_t>;
  CudaArray<Storage> start, end, dstart, dend;
  CudaArray<int32_t> start_positions, end_positions;
  CudaArray<float> row_losses, logsumexp, loss, cpu_logsumexp;

  GpuSpanRun(const SpanInputs& in, const std::vector<float>& reference_logsumexp)
      : start(convert(in.start_logits)), end(convert(in.end_logits)), dstart(in.start_logits.size()),
        dend(in.end_logits.size()), start_positions(in.start_positions), end_positions(in.end_positions),
        row_losses(2 * in.batch), logsumexp(2 * in.batch), loss(1), cpu_logsumexp(reference_logsumexp) {
    for (auto* a : {&dstart, &dend}) a->poison();
    for (auto* a : {&row_losses, &logsumexp, &loss}) a->poison();
  }
  static std::vector<Storage> convert(const std::vector<float>& v) {
    if constexpr (std::is_same_v<T, float>) {
      return v;
    } else {
      return to_bf16_bits(v);
    }
  }
  static std::vector<float> back(const std::vector<Storage>& v) {
    if constexpr (std::is_same_v<T, float>) {
      return v;
    } else {
      return from_bf16_bits(v);
    }
  }
  const T* ptr(const CudaArray<Storage>& a) const { return reinterpret_cast<const T*>(a.get()); }
  T* ptr(CudaArray<Storage>& a) { return reinterpret_cast<T*>(a.get()); }

  // The backward gets the CPU's saved log-sum-exp, so both devices' gradients start from the same values.
  void run(const SpanInputs& in, float dloss, cudaStream_t stream) {
    cuda::span_loss_forward<T>(ptr(start), ptr(end), start_positions.get(), end_positions.get(), row_losses.get(),
                               logsumexp.get(), loss.get(), in.batch, in.seq, stream);
    cuda::span_loss_backward<T>(ptr(start), ptr(end), start_positions.get(), end_positions.get(),
                                cpu_logsumexp.get(), ptr(dstart), ptr(dend), in.batch, in.seq, dloss, stream);
  }
};

template <typename T>
void check_span_loss(SpanInputs in, double grad_rtol) {
  const float dloss = 1.5f;  // not 1, so a dropped upstream factor shows
  const CpuSpanResult ref = cpu_span_loss(in, dloss);
  ASSERT_GT(ref.loss, 0.0f);
  TestStream stream;
  GpuSpanRun<T> gpu(in, ref.logsumexp);
  gpu.run(in, dloss, stream.get());
  stream.sync();
  const std::vector<float> rows = gpu.row_losses.download(), lse = gpu.logsumexp.download();
  const std::vector<float> dstart = gpu.back(gpu.dstart.download()), dend = gpu.back(gpu.dend.download());
  const float loss = gpu.loss.download()[0];
  for (const auto* v : {&rows, &lse, &dstart, &dend}) EXPECT_EQ(0u, test::count_non_finite(*v));
  EXPECT_GT(test::l2_norm(dstart), 0.0);
  EXPECT_GT(test::l2_norm(dend), 0.0);
  auto c = test::compare_close(rows, to_double(ref.row_losses), kLossAtol, kLossRtol);
  EXPECT_TRUE(c.ok()) << "row_losses: " << c.description;
  c = test::compare_close(lse, to_double(ref.logsumexp), kLossAtol, kLossRtol);
  EXPECT_TRUE(c.ok()) << "saved_logsumexp: " << c.description;
  EXPECT_NEAR(loss, ref.loss, kLossAtol + kLossRtol * ref.loss) << "loss";
  const double scale = dloss / 2.0;  // bounds every row's dloss / 2 / kept rows
  c = test::compare_close(dstart, to_double(ref.dstart), kGradAtolPerScale * scale, grad_rtol);
  EXPECT_TRUE(c.ok()) << "dstart_logits: " << c.description;
  c = test::compare_close(dend, to_double(ref.dend), kGradAtolPerScale * scale, grad_rtol);
  EXPECT_TRUE(c.ok()) << "dend_logits: " << c.description;

  // No atomics anywhere: a second forward writes the same loss bits.
  gpu.loss.poison();
  gpu.run(in, dloss, stream.get());
  stream.sync();
  const float again = gpu.loss.download()[0];
  EXPECT_EQ(0, std::memcmp(&loss, &again, sizeof(float))) << "loss not reproducible";
}

TEST(CudaSpanLoss, SquadShapeWithHfLabelFixups) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  SpanInputs in(48, 384, 91);
  in.add_hf_fixups();
  check_span_loss<float>(in, kGradRtol);
}

TEST(CudaSpanLoss, OddSequenceAndLargeBatch) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_span_loss<float>(SpanInputs(300, 77, 92), kGradRtol);  // batch > the sum kernel's 256 threads
}

TEST(CudaSpanLoss, Bf16Logits) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  SpanInputs in(48, 384, 93);
  in.add_hf_fixups();
  in.round_logits_to_bf16();
  check_span_loss<cuda::bf16>(in, kBf16StoreRtol);
}

// Every end label past the sequence: the end side contributes 0 to the loss and a zero gradient, not NaN.
TEST(CudaSpanLoss, SideWithNoKeptRow) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  SpanInputs in(16, 384, 94);
  std::fill(in.end_positions.begin(), in.end_positions.end(), static_cast<int32_t>(in.seq + 1));
  const CpuSpanResult ref = cpu_span_loss(in, 1.0f);
  TestStream stream;
  GpuSpanRun<float> gpu(in, ref.logsumexp);
  gpu.run(in, 1.0f, stream.get());
  stream.sync();
  const std::vector<float> dend = gpu.dend.download(), dstart = gpu.dstart.download();
  EXPECT_EQ(0u, test::count_non_finite(dend));
  EXPECT_EQ(0.0, test::l2_norm(dend));
  EXPECT_GT(test::l2_norm(dstart), 0.0);
  EXPECT_NEAR(gpu.loss.download()[0], ref.loss, kLossAtol + kLossRtol * ref.loss);
}

TEST(CudaSpanLoss, ZeroBatchWritesAZeroLoss) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  TestStream stream;
  CudaArray<float> d_loss(1);
  d_loss.poison();
  cuda::span_loss_forward<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, d_loss.get(), 0, 384,
                                 stream.get());
  stream.sync();
  EXPECT_EQ(0.0f, d_loss.download()[0]);
}

// ------------------------------------------------------------------------------------------ Select column

TEST(CudaSelectColumn, FloatIsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t rows = 48 * 384, cols = 2;  // the SQuAD head's logits
  const std::vector<float> x = test::random_normal(static_cast<size_t>(rows * cols), 95);
  const std::vector<float> dy = test::random_normal(static_cast<size_t>(rows), 96);
  for (int64_t column = 0; column < cols; ++column) {
    std::vector<float> y_ref(rows), dx_ref(rows * cols);
    cpu::select_column_forward(x.data(), y_ref.data(), rows, cols, column);
    cpu::select_column_backward(dy.data(), dx_ref.data(), rows, cols, column);
    TestStream stream;
    CudaArray<float> d_x(x), d_dy(dy), d_y(rows), d_dx(rows * cols);
    d_y.poison();
    d_dx.poison();
    cuda::select_column_forward(d_x.get(), d_y.get(), rows, cols, column, stream.get());
    cuda::select_column_backward(d_dy.get(), d_dx.get(), rows, cols, column, stream.get());
    stream.sync();
    const std::vector<float> y = d_y.download(), dx = d_dx.download();
    EXPECT_EQ(0u, test::count_unwritten(y));
    EXPECT_EQ(0u, test::count_unwritten(dx));
    EXPECT_EQ(0, std::memcmp(y_ref.data(), y.data(), sizeof(float) * y.size())) << "column " << column;
    EXPECT_EQ(0, std::memcmp(dx_ref.data(), dx.data(), sizeof(float) * dx.size())) << "column " << column;
  }
}

TEST(CudaSelectColumn, Bf16IsExact) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int64_t rows = 1001, cols = 3, column = 2;
  const std::vector<uint16_t> x = to_bf16_bits(test::random_normal(static_cast<size_t>(rows * cols), 97));
  const std::vector<uint16_t> dy = to_bf16_bits(test::random_normal(static_cast<size_t>(rows), 98));
  TestStream stream;
  CudaArray<uint16_t> d_x(x), d_dy(dy), d_y(rows), d_dx(rows * cols);
  d_y.poison();
  d_dx.poison();
  cuda::select_column_forward(reinterpret_cast<const cuda::bf16*>(d_x.get()), reinterpret_cast<cuda::bf16*>(d_y.get()),
                              rows, cols, column, stream.get());
  cuda::select_column_backward(reinterpret_cast<const cuda::bf16*>(d_dy.get()),
                               reinterpret_cast<cuda::bf16*>(d_dx.get()), rows, cols, column, stream.get());
  stream.sync();
  const std::vector<uint16_t> y = d_y.download(), dx = d_dx.download();
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(y[r], x[r * cols + column]) << r;
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(dx[r * cols + c], c == column ? dy[r] : uint16_t{0}) << r << "," << c;
  }
}

}  // namespace
}  // namespace sb
