// The CUDA kernels of the ConvS2S ops against the CPU reference (STYLE.md rules 2-4): GLU forward and backward
// and the per-row scaling for float, bf16 and fp16 (src/cuda/glu.h, scale_rows.h), weight normalisation for
// fp32 (src/cuda/weight_norm.h). Sizes hit the 16-byte vector path and the scalar path (odd widths, pointers off
// 16-byte alignment); outputs are poisoned (0xFF bytes: NaN in all three types) and must be written everywhere,
// the elements around them not at all. Then a ConvS2S block graph and the tiny conv_seq2seq workload through
// both executors (loss and every gradient). Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaGlu*:CudaWeightNorm*:CudaScaleRows*:CudaConvS2S*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "src/cpu/glu.h"
#include "src/cpu/scale_rows.h"
#include "src/cpu/weight_norm.h"
#include "src/cuda/element.h"
#include "src/cuda/glu.h"
#include "src/cuda/scale_rows.h"
#include "src/cuda/weight_norm.h"
#include "tests/gpu/every_tensor_check.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/fp16_data.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/typed_storage.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

// ---------------------------------------------------------------- tolerances
// GLU in fp32: sigmoid from expf (2 ulp) and a few roundings (s and 1 - s both from exp(-|b|) <= 1, so no
// cancellation), products of O(1) values: within ~8 fp32 ulp (5e-7) of the CPU's double result rounded once.
constexpr double kGluFp32Rtol = 2e-6;
constexpr double kGluFp32Atol = 1e-7;
// bf16 / fp16 outputs: the fp32 result rounded once more, half an ulp (2^-8, 2^-11 relative), which can land one
// ulp from the rounded CPU value: one ulp relative, twice the fp32 absolute part (test_cuda_bf16_elementwise.cpp).
constexpr double kBf16Rtol = 1.0 / 128;
constexpr double kFp16Rtol = 1.0 / 1024;
constexpr double kHalfAtol = 2e-7;  // also above half of fp16's subnormal spacing (3e-8)
// Weight normalisation: both sides sum in double and then apply the same double formula; only the order of the
// row sums differs (~1e-16 relative), so results differ at most by a rounding boundary (1 fp32 ulp, 1.2e-7).
constexpr double kWeightNormRtol = 3e-7;
constexpr double kWeightNormAtol = 1e-9;
// Graphs: relative L2 of the loss and each gradient. fp32: cuDNN convolutions and cuBLAS GEMMs sum in other
// orders (~1e-6 each); bf16 and fp16 round every activation (2^-8, 2^-11) through ~10 layers.
constexpr double kGraphFp32Tolerance = 2e-4;
constexpr double kGraphBf16Tolerance = 3e-2;
constexpr double kGraphFp16Tolerance = 1e-2;

// ---------------------------------------------------------------- device buffers of T

using test::from_storage;
using test::relative_l2;
using test::representable;
using test::Storage;
using test::to_storage;

// `count` elements of T starting `front` elements into a poisoned allocation with kBack elements after them:
// front = 1 puts the data off 16-byte alignment (the kernels' scalar path).
template <typename T>
class DeviceValues {
 public:
  static constexpr size_t kBack = 9;
  DeviceValues(size_t count, size_t front) : array_(front + count + kBack), count_(count), front_(front) {
    array_.poison();
  }
  DeviceValues(const std::vector<float>& values, size_t front) : DeviceValues(values.size(), front) {
    std::vector<Storage<T>> all = array_.download();
    const std::vector<Storage<T>> stored = to_storage<T>(values);
    std::copy(stored.begin(), stored.end(), all.begin() + std::ptrdiff_t(front_));
    array_.upload(all);
  }
  T* get() const { return reinterpret_cast<T*>(array_.get()) + front_; }
  // The values written, after checking that the margins still hold the poison.
  std::vector<float> download() const {
    const std::vector<float> all = from_storage<T>(array_.download());
    for (size_t i = 0; i < all.size(); ++i) {
      if (i < front_ || i >= front_ + count_) {
        EXPECT_TRUE(std::isnan(all[i])) << "wrote outside the output at " << i;
      }
    }
    return std::vector<float>(all.begin() + std::ptrdiff_t(front_), all.begin() + std::ptrdiff_t(front_ + count_));
  }

 private:
  CudaArray<Storage<T>> array_;
  size_t count_, front_;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const std::string& what) {
  EXPECT_EQ(test::count_unwritten(got), 0u) << what;
  EXPECT_GT(test::l2_norm(want), 0.0) << what;
  const test::CloseComparison c = test::compare_close(got, test::to_double(want), atol, rtol);
  EXPECT_TRUE(c.ok()) << what << ": " << c.description;
}

struct RowsCols {
  int64_t rows, cols;
  size_t front;  // elements between the allocation and the data (1: misaligned)
};

// 3 sentences x 32 positions x 512 channels (the vector path), an odd width, misaligned pointers.
const RowsCols kGluSizes[] = {{96, 512, 0}, {7, 5, 0}, {33, 64, 1}};

// ---------------------------------------------------------------- GLU

template <typename T>
void check_glu(double rtol, double atol) {
  uint32_t seed = 500;
  for (const RowsCols& size : kGluSizes) {
    SCOPED_TRACE(std::to_string(size.rows) + " x " + std::to_string(size.cols) + " at +" + std::to_string(size.front));
    const size_t n = size_t(size.rows * size.cols);
    // b spans sigmoid's tails (|b| up to ~12), where 1 - s must not cancel.
    const std::vector<float> x = representable<T>(test::random_normal(2 * n, seed++, 3.0f));
    const std::vector<float> dy = representable<T>(test::random_normal(n, seed++));
    std::vector<float> y(n), dx(2 * n);
    cpu::glu_forward(x.data(), y.data(), size.rows, size.cols);
    cpu::glu_backward(x.data(), dy.data(), dx.data(), size.rows, size.cols);
    DeviceValues<T> d_x(x, size.front), d_dy(dy, size.front), d_y(n, size.front), d_dx(2 * n, size.front);
    TestStream stream;
    cuda::glu_forward(d_x.get(), d_y.get(), size.rows, size.cols, stream.get());
    cuda::glu_backward(d_x.get(), d_dy.get(), d_dx.get(), size.rows, size.cols, stream.get());
    stream.sync();
    expect_close(d_y.download(), y, atol, rtol, "y");
    expect_close(d_dx.download(), dx, atol, rtol, "dx");
  }
}

TEST(CudaGlu, Fp32MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_glu<float>(kGluFp32Rtol, kGluFp32Atol);
}

TEST(CudaGlu, Bf16MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_glu<cuda::bf16>(kBf16Rtol, kHalfAtol);
}

TEST(CudaGlu, Fp16MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_glu<cuda::fp16>(kFp16Rtol, kHalfAtol);
}

// ---------------------------------------------------------------- per-row scaling

// One fp32 multiplication rounded once to T on both sides: equal bit for bit.
template <typename T>
void check_scale_rows() {
  uint32_t seed = 600;
  for (const RowsCols& size : kGluSizes) {
    SCOPED_TRACE(std::to_string(size.rows) + " x " + std::to_string(size.cols) + " at +" + std::to_string(size.front));
    const size_t n = size_t(size.rows * size.cols);
    const std::vector<float> x = representable<T>(test::random_normal(n, seed++));
    std::vector<float> factors = test::random_uniform(size_t(size.rows), seed++, 0.5f, 6.0f);  // sqrt(lengths)
    factors[0] = 0.0f;                                                                         // a masked row
    std::vector<float> y(n);
    cpu::scale_rows_forward(x.data(), factors.data(), y.data(), size.rows, size.cols);
    const std::vector<float> want = representable<T>(y);
    DeviceValues<T> d_x(x, size.front), d_y(n, size.front);
    CudaArray<float> d_factors(factors);
    TestStream stream;
    cuda::scale_rows_forward(d_x.get(), d_factors.get(), d_y.get(), size.rows, size.cols, stream.get());
    stream.sync();
    EXPECT_EQ(d_y.download(), want);
    cuda::scale_rows_forward(d_x.get(), d_factors.get(), d_x.get(), size.rows, size.cols, stream.get());  // in place
    stream.sync();
    EXPECT_EQ(d_x.download(), want) << "in place";
  }
}

TEST(CudaScaleRows, EqualsTheCpuRoundedOnceForEveryType) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  check_scale_rows<float>();
  check_scale_rows<cuda::bf16>();
  check_scale_rows<cuda::fp16>();
}

// ---------------------------------------------------------------- weight normalisation

TEST(CudaWeightNorm, Fp32MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // A decoder conv (2048 x 3 x 1024 flattened, fewer rows), fc3's shape (many short rows), a short odd row.
  const RowsCols sizes[] = {{64, 3072, 0}, {3000, 512, 0}, {5, 7, 1}};
  uint32_t seed = 700;
  for (const RowsCols& size : sizes) {
    SCOPED_TRACE(std::to_string(size.rows) + " x " + std::to_string(size.cols));
    const size_t n = size_t(size.rows * size.cols), rows = size_t(size.rows);
    const std::vector<float> v = test::random_normal(n, seed++), g = test::random_normal(rows, seed++);
    const std::vector<float> dw = test::random_normal(n, seed++);
    std::vector<float> w(n), norms(rows), dv(n), dg(rows);
    cpu::weight_norm_forward(v.data(), g.data(), w.data(), norms.data(), size.rows, size.cols);
    cpu::weight_norm_backward(dw.data(), v.data(), g.data(), norms.data(), dv.data(), dg.data(), size.rows,
                              size.cols);
    DeviceValues<float> d_v(v, size.front), d_g(g, size.front), d_dw(dw, size.front);
    DeviceValues<float> d_w(n, size.front), d_norms(rows, size.front), d_dv(n, size.front), d_dg(rows, size.front);
    TestStream stream;
    cuda::weight_norm_forward(d_v.get(), d_g.get(), d_w.get(), d_norms.get(), size.rows, size.cols, stream.get());
    // The backward pass reads the CPU's norms: each pass is compared on the same inputs.
    DeviceValues<float> d_cpu_norms(norms, size.front);
    cuda::weight_norm_backward(d_dw.get(), d_v.get(), d_g.get(), d_cpu_norms.get(), d_dv.get(), d_dg.get(), size.rows,
                               size.cols, stream.get());
    stream.sync();
    expect_close(d_w.download(), w, kWeightNormAtol, kWeightNormRtol, "w");
    expect_close(d_norms.download(), norms, kWeightNormAtol, kWeightNormRtol, "norms");
    expect_close(d_dv.download(), dv, kWeightNormAtol, kWeightNormRtol, "dv");
    expect_close(d_dg.download(), dg, kWeightNormAtol, kWeightNormRtol, "dg");
  }
}

// ---------------------------------------------------------------- graphs through both executors

struct BuiltGraph {
  Graph graph;
  TensorId loss = kNoTensor;
  std::map<TensorId, TensorId> gradients;
  MemoryPlan plan;
};

// The graph built by `build` on the CPU in fp32 and on the GPU in `compute`, the same parameters (normal, stddev
// 0.5) and inputs (`inputs` writes them by name) on both, one forward and backward pass; the loss's relative
// error and every gradient's relative L2 error at most `tolerance`.
using Build = std::function<TensorId(GraphBuilder&)>;
using WriteInputs = std::function<void(const Graph&, const InputWriter&)>;

// every_output: each node's outputs too, in node order (every_tensor_check.h), every activation kept to the end.
void expect_gpu_matches_cpu(const Build& build, const WriteInputs& inputs, DType compute, double tolerance,
                            bool every_output = false) {
  BuiltGraph cpu_graph, gpu_graph;
  for (auto [built, dtype] : {std::pair{&cpu_graph, DType::kFloat32}, std::pair{&gpu_graph, compute}}) {
    GraphBuilder builder(built->graph, dtype);
    built->loss = build(builder);
    built->gradients = append_backward(built->graph, built->loss);
    built->plan = every_output ? test::plan_keeping_every_activation(built->graph) : plan_memory(built->graph);
  }
  CpuExecutor cpu(cpu_graph.graph, cpu_graph.plan);
  LossScaleConfig no_scaling;
  no_scaling.mode = LossScaling::kOff;  // gradients compared as they are
  std::unique_ptr<Executor> gpu = make_cuda_executor(gpu_graph.graph, gpu_graph.plan, false, no_scaling);
  uint32_t seed = 900;
  for (TensorId id : cpu_graph.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = cpu_graph.graph.tensor(id);
    const std::vector<float> values = test::random_normal(size_t(info.elements()), seed++, 0.5f);
    cpu.write_tensor(id, values.data(), info.bytes());
    gpu->write_tensor(gpu_graph.graph.find_tensor(info.name), values.data(), info.bytes());
  }
  inputs(cpu_graph.graph, [&](TensorId id, const void* data, size_t bytes) {
    cpu.write_tensor(id, data, bytes);
    gpu->write_tensor(gpu_graph.graph.find_tensor(cpu_graph.graph.tensor(id).name), data, bytes);
  });
  cpu.run();
  gpu->run();
  if (every_output) test::expect_every_output_matches(cpu_graph.graph, cpu, gpu_graph.graph, *gpu, tolerance);
  float cpu_loss = 0, gpu_loss = 0;
  cpu.read_tensor(cpu_graph.loss, &cpu_loss, 4);
  gpu->read_tensor(gpu_graph.loss, &gpu_loss, 4);
  ASSERT_TRUE(std::isfinite(gpu_loss));
  EXPECT_NEAR(gpu_loss, cpu_loss, tolerance * std::fabs(cpu_loss)) << dtype_name(compute);
  for (const auto& [parameter, gradient] : cpu_graph.gradients) {
    const TensorInfo& info = cpu_graph.graph.tensor(parameter);
    std::vector<float> want(size_t(info.elements())), got(want.size());
    cpu.read_tensor(gradient, want.data(), info.bytes());
    gpu->read_tensor(gpu_graph.gradients.at(gpu_graph.graph.find_tensor(info.name)), got.data(), info.bytes());
    if (test::l2_norm(want) == 0.0) {  // the padding rows of an embedding table, say: zero on both devices
      EXPECT_EQ(test::l2_norm(got), 0.0) << info.name;
      continue;
    }
    EXPECT_EQ(test::count_non_finite(got), 0u) << info.name;
    EXPECT_LE(relative_l2(got, want), tolerance) << dtype_name(compute) << " gradient of " << info.name;
  }
}

// An encoder block (masked positions, weight-normalised "same" convolution, GLU, residual), GradMultiply, a
// decoder block (causal convolution, GLU) attending over the encoder output, a weight-normalised linear head.
constexpr int64_t kBatch = 3, kTime = 7, kChannels = 8, kClasses = 5;
const std::vector<int32_t> kLengths{7, 5, 2};

TensorId block_graph(GraphBuilder& b) {
  const TensorId x = b.parameter("x", {kBatch, 1, kTime, kChannels});
  const TensorId mask = b.input("mask", {kBatch, 1, kTime});
  const TensorId lengths = b.input("lengths", {kBatch}, DType::kInt32);
  Conv2dOptions same, causal;
  same.pad_left = same.pad_right = 1;
  causal.pad_left = 2;
  auto conv = [&](const std::string& name, TensorId in, const Conv2dOptions& padding) {
    const TensorId w = b.weight_norm(b.parameter(name + ".weight_v", {2 * kChannels, 1, 3, kChannels}),
                                     b.parameter(name + ".weight_norm", {2 * kChannels}));
    return b.glu(b.conv2d(in, w, b.parameter(name + ".bias", {2 * kChannels}), padding));
  };
  TensorId z = b.scale(b.add(conv("encoder", b.scale_rows(x, mask), same), x), std::sqrt(0.5));
  z = b.grad_multiply(z, 0.5);
  const TensorId h = conv("decoder", b.parameter("y", {kBatch, 1, kTime, kChannels}), causal);
  const TensorId scores = b.matmul(h, z, false, true);  // (B, 1, T, T)
  const TensorId context = b.matmul(b.masked_softmax(scores, 1.0, lengths, false), z, false, false);
  const TensorId w = b.weight_norm(b.parameter("fc.weight_v", {kClasses, kChannels}), b.parameter("fc.weight_norm", {kClasses}));
  const TensorId logits = b.linear(b.add(context, h), w, b.parameter("fc.bias", {kClasses}));
  const int64_t rows = kBatch * kTime;
  return b.softmax_cross_entropy(b.reshape(logits, {rows, kClasses}), b.input("targets", {rows}, DType::kInt32), 0.1,
                                 -1);
}

void block_inputs(const Graph& graph, const InputWriter& write) {
  std::vector<float> mask(size_t(kBatch * kTime), 0.0f);
  for (int64_t s = 0; s < kBatch; ++s) {
    for (int64_t t = 0; t < kLengths[size_t(s)]; ++t) mask[size_t(s * kTime + t)] = 1.0f;
  }
  write_input(write, graph, "mask", mask);
  write_input(write, graph, "lengths", kLengths);
  write_input(write, graph, "targets", test::random_ids(size_t(kBatch * kTime), 31, 0, kClasses - 1));
}

TEST(CudaConvS2SGraph, BlockMatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kFloat32, kGraphFp32Tolerance);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kBFloat16, kGraphBf16Tolerance);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kFloat16, kGraphFp16Tolerance);
}

// The same block with every node's outputs compared, in node order: a wrong gradient above is traced to the
// first op whose output departs from the CPU's.
TEST(CudaConvS2SGraph, BlockEveryOutputMatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kFloat32, kGraphFp32Tolerance, true);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kBFloat16, kGraphBf16Tolerance, true);
  expect_gpu_matches_cpu(block_graph, block_inputs, DType::kFloat16, kGraphFp16Tolerance, true);
}

// The registered workload at tiny scale, without dropout (the devices would draw the same masks, but the check
// is about the kernels), on its own synthetic batch, every gradient tensor elementwise in fp32. (bf16 and fp16
// are compared by gradient norms over three steps for every workload in test_cuda_engine.cpp.)
TEST(CudaConvS2SGraph, TinyWorkloadMatchesTheCpuFp32) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const Workload& workload = find_workload("conv_seq2seq");
  const Build build = [&](GraphBuilder& b) {
    b.disable_dropout();
    return workload.build(b, 3, WorkloadScale::kTiny).loss;
  };
  const WriteInputs inputs = [&](const Graph& graph, const InputWriter& write) { workload.synthesize(graph, 5, write); };
  expect_gpu_matches_cpu(build, inputs, DType::kFloat32, kGraphFp32Tolerance);
}

}  // namespace
}  // namespace sb
