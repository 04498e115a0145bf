// sb::cuda::max_pool2d_* / avg_pool2d_* (src/cuda/pooling.h) against the CPU reference (src/cpu/pooling.h):
// TF-"SAME" max 3 x 3 stride 2 (asymmetric), ResNet's max 3 x 3 s2 p1, NASNet's avg 3 x 3 s1 without the
// padding in the count, a padded average with it, a global average over 33 x 33 and NASNet's shifted 1 x 1
// subsample (a negative padding); fp32 and bf16. Max values and argmax are exact; gradients are gathered on
// the GPU and scattered on the CPU. Then a pooling graph through both executors.
// Run: gpu_tests --gtest_filter='CudaPooling*'.
#include <gtest/gtest.h>

#include <tuple>
#include <type_traits>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/pooling.h"
#include "src/cuda/pooling.h"
#include "tests/gpu/cnn_graph_check.h"
#include "tests/support/bf16_data.h"
#include "tests/support/conv_geometry.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::pool;

using test::CudaArray;

// Relative L2 against the CPU's double sums: fp32 sums of <= 1,089 terms: ~1e-7, bound 1e-5; bf16 outputs
// rounded once: bound 1e-2. Max-pool outputs and argmax must be identical (a selection, no arithmetic).
constexpr double kFp32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1e-2;
constexpr double kGraphFp32Tolerance = 1e-4;
constexpr double kGraphBf16Tolerance = 3e-2;

template <typename T>
struct Buffers {
  static std::vector<float> representable(std::vector<float> v) {
    if constexpr (std::is_same_v<T, float>) return v;
    return test::round_to_bf16(v).values;
  }
  using Storage = std::conditional_t<std::is_same_v<T, float>, float, uint16_t>;
  static std::unique_ptr<CudaArray<Storage>> upload(const std::vector<float>& v) {
    if constexpr (std::is_same_v<T, float>) {
      return std::make_unique<CudaArray<float>>(v);
    } else {
      return std::make_unique<CudaArray<uint16_t>>(test::bf16_bits_of(v));
    }
  }
  static std::vector<float> download(const CudaArray<Storage>& a) {
    if constexpr (std::is_same_v<T, float>) {
      return a.download();
    } else {
      return test::widen(a.download());
    }
  }
  static T* ptr(const std::unique_ptr<CudaArray<Storage>>& a) { return reinterpret_cast<T*>(a->get()); }
};

template <typename T>
void check_pooling(const Conv2dGeometry& g, double tolerance) {
  using B = Buffers<T>;
  const auto x = B::representable(test::random_normal(size_t(g.x_elements()), 61));
  const auto dy = B::representable(test::random_normal(size_t(g.y_elements()), 62));
  std::vector<float> y_max(dy.size()), dx_max(x.size());
  std::vector<int32_t> argmax(dy.size());
  cpu::max_pool2d_forward(x.data(), y_max.data(), argmax.data(), g);
  cpu::max_pool2d_backward(dy.data(), argmax.data(), dx_max.data(), g);
  auto d_x = B::upload(x), d_dy = B::upload(dy), d_y = B::upload(dy), d_dx = B::upload(x);
  CudaArray<int32_t> d_argmax(argmax.size());
  test::TestStream stream;
  d_y->poison(), d_dx->poison(), d_argmax.poison();
  cuda::max_pool2d_forward(B::ptr(d_x), B::ptr(d_y), d_argmax.get(), g, stream.get());
  cuda::max_pool2d_backward(B::ptr(d_dy), d_argmax.get(), B::ptr(d_dx), g, stream.get());
  stream.sync();
  EXPECT_EQ(B::download(*d_y), y_max) << "max values";
  EXPECT_EQ(d_argmax.download(), argmax) << "argmax";
  ASSERT_GT(test::l2_norm(dx_max), 0.0);
  EXPECT_LE(test::relative_l2(B::download(*d_dx), dx_max), tolerance) << "max dx";
  for (bool include : {true, false}) {
    std::vector<float> y(dy.size()), dx(x.size());
    cpu::avg_pool2d_forward(x.data(), y.data(), g, include);
    cpu::avg_pool2d_backward(dy.data(), dx.data(), g, include);
    d_y->poison(), d_dx->poison();
    cuda::avg_pool2d_forward(B::ptr(d_x), B::ptr(d_y), g, include, stream.get());
    cuda::avg_pool2d_backward(B::ptr(d_dy), B::ptr(d_dx), g, include, stream.get());
    stream.sync();
    const auto got_y = B::download(*d_y), got_dx = B::download(*d_dx);
    EXPECT_EQ(test::count_non_finite(got_y) + test::count_non_finite(got_dx), 0u);
    EXPECT_LE(test::relative_l2(got_y, y), tolerance) << "avg y, count_include_pad " << include;
    EXPECT_LE(test::relative_l2(got_dx, dx), tolerance) << "avg dx, count_include_pad " << include;
  }
}

class CudaPooling : public ::testing::TestWithParam<Conv2dGeometry> {};

TEST_P(CudaPooling, Fp32MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_pooling<float>(GetParam(), kFp32Tolerance);
}

TEST_P(CudaPooling, Bf16MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_pooling<cuda::bf16>(GetParam(), kBf16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(Windows, CudaPooling,
                         ::testing::Values(pool(2, 42, 42, 40, 3, 2, 0, 1),     // TF "SAME" stride 2
                                           pool(2, 33, 33, 24, 3, 2, 1, 1),     // ResNet stem pool
                                           pool(2, 21, 21, 36, 3, 1, 1, 1),     // NASNet avg 3 x 3 s1
                                           pool(3, 33, 33, 21, 33, 1, 0, 0),    // global average
                                           pool(1, 11, 13, 5, 1, 2, 0, 0)));    // 1 x 1 stride 2 (subsample)

// NASNet's factorized reduction, path 2 (src/cpu/pooling.h): a 1 x 1 stride-2 average with pads -1 (a crop)
// and +1, whose last window is padding only on an odd input; the only pooling that allows such windows is the
// average that counts the padding, so max pooling is not run here.
template <typename T>
void check_shifted_subsample(int64_t size, double tolerance) {
  using B = Buffers<T>;
  const Conv2dGeometry g = test::pool(2, size, size, 24, 1, 2, -1, 1);
  const auto x = B::representable(test::random_normal(size_t(g.x_elements()), 63));
  const auto dy = B::representable(test::random_normal(size_t(g.y_elements()), 64));
  std::vector<float> y(dy.size()), dx(x.size());
  cpu::avg_pool2d_forward(x.data(), y.data(), g, true);
  cpu::avg_pool2d_backward(dy.data(), dx.data(), g, true);
  auto d_x = B::upload(x), d_dy = B::upload(dy), d_y = B::upload(dy), d_dx = B::upload(x);
  test::TestStream stream;
  d_y->poison(), d_dx->poison();
  cuda::avg_pool2d_forward(B::ptr(d_x), B::ptr(d_y), g, true, stream.get());
  cuda::avg_pool2d_backward(B::ptr(d_dy), B::ptr(d_dx), g, true, stream.get());
  stream.sync();
  const auto got_y = B::download(*d_y), got_dx = B::download(*d_dx);
  ASSERT_GT(test::l2_norm(y), 0.0);
  EXPECT_EQ(test::count_non_finite(got_y) + test::count_non_finite(got_dx), 0u);
  EXPECT_LE(test::relative_l2(got_y, y), tolerance) << "shifted subsample y, size " << size;
  EXPECT_LE(test::relative_l2(got_dx, dx), tolerance) << "shifted subsample dx, size " << size;
}

TEST(CudaPoolingShifted, SubsampleMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  for (int64_t size : {83, 42}) {  // the odd and even inputs of NASNet's factorized reductions
    check_shifted_subsample<float>(size, kFp32Tolerance);
    check_shifted_subsample<cuda::bf16>(size, kBf16Tolerance);
  }
}

// With max pooling first (fp32) or a stride-2 average in its place (bf16: rounding x to bf16 on the GPU only
// would move some windows' maxima and their gradients to a neighbour; the kernel test above covers bf16 max
// pooling on identical inputs).
TensorId pool_graph(GraphBuilder& b, bool with_max) {
  const TensorId x = b.parameter("x", {2, 13, 12, 6});
  TensorId h = with_max ? b.max_pool2d(x, 3, Conv2dOptions::same_padding(2))
                        : b.avg_pool2d(x, 3, Conv2dOptions::same_padding(2), false);
  h = b.add(b.avg_pool2d(h, 3, Conv2dOptions::with(1, 1), false), b.avg_pool2d(h, 3, Conv2dOptions::with(1, 1), true));
  h = b.conv2d(h, b.parameter("w", {4, 1, 1, 6}));
  h = b.add(b.global_avg_pool(h), b.avg_pool2d(h, 6, Conv2dOptions::with(2, 0), true));
  return b.softmax_cross_entropy(b.reshape(h, {2, 4}), b.input("targets", {2}, DType::kInt32), 0.0, -1);
}

TEST(CudaPoolingGraph, ExecutorMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::expect_gpu_matches_cpu([](GraphBuilder& b) { return pool_graph(b, true); }, DType::kFloat32,
                               kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu([](GraphBuilder& b) { return pool_graph(b, false); }, DType::kBFloat16,
                               kGraphBf16Tolerance);
}

}  // namespace
}  // namespace sb
