// sb::cuda::upsample_* (src/cuda/upsample.h) and concat_last / split_last (src/cuda/concat.h) against the CPU
// reference: YOLOv3's nearest ×2, DeepLab's bilinear 33 -> 513 (×15.5, align_corners false and true), the
// 1 x 1 broadcast, a downsampling resize, FPN's ×2 (16-byte channel packs: also YOLOv3's and the broadcast's
// channels; not 21 or 5), fp32 and bf16; outputs poisoned first; concat/split bit-exact. Then
// a route / image-pooling graph through both executors. Run: gpu_tests --gtest_filter='CudaUpsample*:CudaConcat*'.
#include <gtest/gtest.h>

#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/concat.h"
#include "src/cpu/upsample.h"
#include "src/cuda/concat.h"
#include "src/cuda/upsample.h"
#include "tests/gpu/cnn_graph_check.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;

// Relative L2 against the CPU (double weights and sums): fp32 weights and sums of <= ~40 terms: ~1e-7,
// bound 1e-5; bf16 outputs rounded once: 1e-2. Nearest forward is a copy: exact.
constexpr double kFp32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1e-2;
constexpr double kGraphFp32Tolerance = 2e-4;  // two convolutions (cuDNN's Winograd/FFT: ~1e-5 each)
constexpr double kGraphBf16Tolerance = 3e-2;

template <typename T>
void check_resize(const cpu::ResizeGeometry& g, double tolerance) {
  const size_t in = size_t(g.batch * g.in_h * g.in_w * g.channels);
  const size_t out = size_t(g.batch * g.out_h * g.out_w * g.channels);
  std::vector<float> x = test::random_normal(in, 81), dy = test::random_normal(out, 82);
  constexpr bool kBf16 = !std::is_same_v<T, float>;
  if (kBf16) x = test::round_to_bf16(x).values, dy = test::round_to_bf16(dy).values;
  auto upload = [](const std::vector<float>& v) {
    if constexpr (kBf16) {
      return std::make_unique<CudaArray<uint16_t>>(test::bf16_bits_of(v));
    } else {
      return std::make_unique<CudaArray<float>>(v);
    }
  };
  auto download = [](const auto& a) {
    if constexpr (kBf16) {
      return test::widen(a->download());
    } else {
      return a->download();
    }
  };
  auto p = [](const auto& a) { return reinterpret_cast<T*>(a->get()); };
  auto d_x = upload(x), d_dy = upload(dy), d_y = upload(dy), d_dx = upload(x);
  test::TestStream stream;
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> y(out), dx(in);
    d_y->poison(), d_dx->poison();
    if (mode == 0) {
      cpu::upsample_nearest_forward(x.data(), y.data(), g);
      cpu::upsample_nearest_backward(dy.data(), dx.data(), g);
      cuda::upsample_nearest_forward(p(d_x), p(d_y), g, stream.get());
      cuda::upsample_nearest_backward(p(d_dy), p(d_dx), g, stream.get());
    } else {
      cpu::upsample_bilinear_forward(x.data(), y.data(), g, mode == 2);
      cpu::upsample_bilinear_backward(dy.data(), dx.data(), g, mode == 2);
      cuda::upsample_bilinear_forward(p(d_x), p(d_y), g, mode == 2, stream.get());
      cuda::upsample_bilinear_backward(p(d_dy), p(d_dx), g, mode == 2, stream.get());
    }
    stream.sync();
    const auto got_y = download(d_y), got_dx = download(d_dx);
    EXPECT_EQ(test::count_non_finite(got_y) + test::count_non_finite(got_dx), 0u) << "mode " << mode;
    if (mode == 0) {
      EXPECT_EQ(got_y, y) << "nearest is a copy";
    }
    EXPECT_LE(test::relative_l2(got_y, y), tolerance) << "y, mode " << mode;
    EXPECT_LE(test::relative_l2(got_dx, dx), tolerance) << "dx, mode " << mode;
  }
}

class CudaUpsample : public ::testing::TestWithParam<cpu::ResizeGeometry> {};

TEST_P(CudaUpsample, Fp32MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_resize<float>(GetParam(), kFp32Tolerance);
}

TEST_P(CudaUpsample, Bf16MatchesTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_resize<cuda::bf16>(GetParam(), kBf16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(Sizes, CudaUpsample,
                         ::testing::Values(cpu::ResizeGeometry{2, 19, 19, 16, 38, 38},    // YOLOv3 ×2
                                           cpu::ResizeGeometry{1, 33, 33, 21, 513, 513},  // DeepLabv3 output
                                           cpu::ResizeGeometry{2, 1, 1, 32, 33, 33},      // image pooling
                                           cpu::ResizeGeometry{1, 20, 17, 5, 7, 6},       // downsampling
                                           cpu::ResizeGeometry{2, 25, 42, 64, 50, 84}));  // FPN's top-down ×2

TEST(CudaConcat, ConcatAndSplitAreExactCopies) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const int64_t rows = 2 * 42 * 42;
  const std::vector<int64_t> widths{168, 168, 168, 168, 168, 168, 3};  // NASNet's 6 x F, and an odd part
  std::vector<std::vector<float>> parts;
  std::vector<std::unique_ptr<CudaArray<float>>> device_parts;
  std::vector<const float*> host_pointers, device_pointers;
  int64_t total = 0;
  for (size_t k = 0; k < widths.size(); ++k) {
    parts.push_back(test::random_normal(size_t(rows * widths[k]), uint32_t(90 + k)));
    device_parts.push_back(std::make_unique<CudaArray<float>>(parts.back()));
    host_pointers.push_back(parts.back().data());
    device_pointers.push_back(device_parts.back()->get());
    total += widths[k];
  }
  std::vector<float> want(size_t(rows * total));
  cpu::concat_last(host_pointers, widths, want.data(), rows);
  CudaArray<float> y(want.size());
  y.poison();
  test::TestStream stream;
  cuda::concat_last(device_pointers, widths, y.get(), rows, stream.get());
  stream.sync();
  EXPECT_EQ(y.download(), want);
  std::vector<float*> outputs;
  for (auto& part : device_parts) part->poison(), outputs.push_back(part->get());
  cuda::split_last(y.get(), outputs, widths, rows, stream.get());
  stream.sync();
  for (size_t k = 0; k < widths.size(); ++k) EXPECT_EQ(device_parts[k]->download(), parts[k]) << "part " << k;
}

TensorId route_graph(GraphBuilder& b) {
  TensorId h = b.concat(
      {b.upsample_nearest(b.parameter("deep", {2, 5, 5, 8}), 10, 10), b.parameter("route", {2, 10, 10, 4})});
  const TensorId pooled = b.conv2d(b.global_avg_pool(h), b.parameter("wp", {12, 1, 1, 12}));
  h = b.add(h, b.upsample_bilinear(pooled, 10, 10, false));
  const std::vector<TensorId> parts = b.split(h, {5, 6, 1});
  h = b.conv2d(b.concat({parts[1], parts[0]}), b.parameter("w", {3, 1, 1, 11}));
  h = b.upsample_bilinear(h, 37, 29, false);
  const int64_t rows = b.graph().tensor(h).elements() / 3;
  return b.softmax_cross_entropy(b.reshape(h, {rows, 3}), b.input("targets", {rows}, DType::kInt32), 0.0, -1);
}

TEST(CudaUpsampleConcatGraph, ExecutorMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::expect_gpu_matches_cpu(route_graph, DType::kFloat32, kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu(route_graph, DType::kBFloat16, kGraphBf16Tolerance);
}

}  // namespace
}  // namespace sb
