// sb::cuda::Conv2dRunner (cuDNN, src/cuda/conv2d.h) against the CPU reference (src/cpu/conv2d.h): forward,
// backward data and backward filter for k x k "same", pointwise, strided with TF-"SAME" asymmetric padding,
// atrous, depthwise (stride 1 and 2, channel multiplier 2) and grouped convolutions, in exact fp32, TF32,
// bf16 and fp16; outputs poisoned first and written everywhere. The depthwise geometries that scalebench's
// own kernels run (src/cuda/depthwise_conv2d.h: K 3/5/7, stride 1/2, asymmetric and TF-"SAME" padding, odd
// sizes, C = 5, 42, 84, 264 where the vectors narrow or the channel slices are partial) must report them as
// their algorithm; their views one element off alignment, the backward filter's block count following the
// workspace (cuDNN below one block) and its bitwise repeatability. Then conv2d graphs (bias, asymmetric
// padding, depthwise) through the CUDA executor against the CPU executor, fp32 and bf16.
// Run: gpu_tests --gtest_filter='CudaConv2d*'. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/half_precision.h"
#include "src/cpu/conv2d.h"
#include "src/cuda/conv2d.h"
#include "src/cuda/depthwise_conv2d.h"
#include "src/cuda/depthwise_conv2d_tiles.h"
#include "tests/gpu/cnn_graph_check.h"
#include "tests/support/conv_geometry.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::geometry;

// Relative L2 error of each pass against the fp64-accumulated CPU reference on identical inputs:
// exact fp32 (FMA, other summation orders over <= 1,200 taps): ~1e-7 for direct and GEMM algorithms; the
// Winograd and FFT transforms cuDNN may pick lose up to ~1e-5, so the bound is 5e-5 (the depthwise kernels
// sum <= 49 taps, or a filter tap's N·Ho·Wo products in per-thread fp32 runs added in double: ~1e-7);
// TF32 (10-bit mantissa operands, fp32 accumulation): ~5e-4 per product, bound 3e-3;
// bf16 / fp16 (fp32 accumulation, the output rounded once to 8 / 11 bits): 2^-9 / 2^-12 per element, plus
// fp16 Winograd's transform error (~1e-3); bounds 1e-2 / 5e-3 (a wrong tap, stride or padding is off by O(1)).
constexpr double kFp32Tolerance = 5e-5;
constexpr double kTf32Tolerance = 3e-3;
constexpr double kBf16Tolerance = 1e-2;
constexpr double kFp16Tolerance = 5e-3;
// The graph comparisons chain three convolutions, a bias and the loss: about twice the single-pass bounds.
constexpr double kGraphFp32Tolerance = 1e-4;
constexpr double kGraphBf16Tolerance = 2e-2;

// cuDNN's scratch offered in these tests (the graph builder offers min(256 MiB, max(1 MiB, 2 x operand))).
constexpr uint64_t kLibraryWorkspace = 64ull << 20;

struct Mode {
  DType dtype;
  bool tf32;
  double tolerance;
  const char* name;
};

// Host values as the device holds them: rounded to the dtype (both devices see the same numbers).
std::vector<float> representable(std::vector<float> values, DType dtype) {
  for (float& v : values) {
    if (dtype == DType::kBFloat16) v = bf16_bits_to_float(float_to_bf16_bits(v));
    if (dtype == DType::kFloat16) v = fp16_bits_to_float(float_to_fp16_bits(v));
  }
  return values;
}

// A device buffer of `values` in `dtype` (fp32 or 16-bit bit patterns).
struct DeviceTensor {
  DType dtype;
  size_t count;
  test::CudaArray<unsigned char> bytes;
  size_t offset = 0;  // elements before the view (1: a view aligned to one element only)
  DeviceTensor(DType type, size_t n, size_t skip = 0)
      : dtype(type), count(n + skip), bytes((n + skip) * dtype_size(type)), offset(skip) {
    bytes.poison();
  }
  DeviceTensor(DType type, const std::vector<float>& view, size_t skip = 0) : DeviceTensor(type, view.size(), skip) {
    std::vector<float> values(skip, 1.0f);
    values.insert(values.end(), view.begin(), view.end());
    std::vector<unsigned char> host(bytes.size());
    for (size_t i = 0; i < count; ++i) {
      if (dtype == DType::kFloat32) {
        std::memcpy(&host[4 * i], &values[i], 4);
      } else {
        const uint16_t b = dtype == DType::kBFloat16 ? float_to_bf16_bits(values[i]) : float_to_fp16_bits(values[i]);
        std::memcpy(&host[2 * i], &b, 2);
      }
    }
    bytes.upload(host);
  }
  void* view() const { return bytes.get() + offset * dtype_size(dtype); }
  std::vector<float> download() const {
    const std::vector<unsigned char> host = bytes.download();
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
      if (dtype == DType::kFloat32) {
        std::memcpy(&values[i], &host[4 * i], 4);
      } else {
        uint16_t b = 0;
        std::memcpy(&b, &host[2 * i], 2);
        values[i] = dtype == DType::kBFloat16 ? bf16_bits_to_float(b) : fp16_bits_to_float(b);
      }
    }
    return std::vector<float>(values.begin() + long(offset), values.end());
  }
};

// The three passes of g in `mode` against the CPU, their buffers `skip` elements past an allocation (1: views
// aligned to one element, the depthwise kernels' scalar path); `library_bytes` of workspace after the padded
// copy. Returns the runners' algorithms, forward / data / filter.
std::string check_passes(const Conv2dGeometry& g, const Mode& mode, size_t skip = 0,
                         uint64_t library_bytes = kLibraryWorkspace) {
  const auto x = representable(test::random_normal(size_t(g.x_elements()), 11), mode.dtype);
  const auto w = representable(test::random_normal(size_t(g.w_elements()), 12, 0.3f), mode.dtype);
  const auto dy = representable(test::random_normal(size_t(g.y_elements()), 13), mode.dtype);
  std::vector<float> y_ref(dy.size()), dx_ref(x.size()), dw_ref(w.size());
  cpu::conv2d_forward(x.data(), w.data(), y_ref.data(), g);
  cpu::conv2d_backward_data(dy.data(), w.data(), dx_ref.data(), g);
  cpu::conv2d_backward_filter(x.data(), dy.data(), dw_ref.data(), g);

  const uint64_t workspace_bytes = conv2d_padded_copy_bytes(g, dtype_size(mode.dtype)) + library_bytes;
  test::CudaArray<unsigned char> workspace(workspace_bytes);
  DeviceTensor dx_in(mode.dtype, x, skip), w_in(mode.dtype, w, skip), dy_in(mode.dtype, dy, skip);
  DeviceTensor y(mode.dtype, dy.size(), skip), dx(mode.dtype, x.size(), skip), dw(mode.dtype, w.size(), skip);
  test::TestStream stream;
  const cuda::Conv2dRunner forward(g, mode.dtype, mode.tf32, cuda::ConvPass::kForward, workspace_bytes);
  const cuda::Conv2dRunner data(g, mode.dtype, mode.tf32, cuda::ConvPass::kBackwardData, workspace_bytes);
  const cuda::Conv2dRunner filter(g, mode.dtype, mode.tf32, cuda::ConvPass::kBackwardFilter, workspace_bytes);
  forward.run(dx_in.view(), w_in.view(), y.view(), workspace.get(), stream.get());
  data.run(dy_in.view(), w_in.view(), dx.view(), workspace.get(), stream.get());
  filter.run(dx_in.view(), dy_in.view(), dw.view(), workspace.get(), stream.get());
  stream.sync();
  const std::string algorithms = forward.algorithm() + " / " + data.algorithm() + " / " + filter.algorithm();
  const std::string where = std::string(mode.name) + " " + algorithms;
  for (const auto& [name, got, want] : {std::tuple{"y", y.download(), y_ref}, std::tuple{"dx", dx.download(), dx_ref},
                                        std::tuple{"dw", dw.download(), dw_ref}}) {
    EXPECT_GT(test::l2_norm(want), 0.0) << name;
    EXPECT_EQ(test::count_non_finite(got), 0u) << name << " (poison left or overflow) " << where;
    EXPECT_LE(test::relative_l2(got, want), mode.tolerance) << name << " " << where;
  }
  // The depthwise backward filter reduces in a fixed order: a second run gives the same bits.
  if (filter.algorithm().find("scalebench depthwise") != std::string::npos) {
    DeviceTensor again(mode.dtype, w.size(), skip);
    filter.run(dx_in.view(), dy_in.view(), again.view(), workspace.get(), stream.get());
    stream.sync();
    EXPECT_EQ(again.bytes.download(), dw.bytes.download()) << "dw not bitwise repeatable " << where;
  }
  return algorithms;
}

const Mode kModes[] = {{DType::kFloat32, false, kFp32Tolerance, "fp32"},
                       {DType::kFloat32, true, kTf32Tolerance, "tf32"},
                       {DType::kBFloat16, false, kBf16Tolerance, "bf16"},
                       {DType::kFloat16, false, kFp16Tolerance, "fp16"}};

class CudaConv2d : public ::testing::TestWithParam<Conv2dGeometry> {};

// Depthwise geometries the depthwise kernels cover must run on them in all three passes (not cuDNN).
void expect_depthwise_kernels(const Conv2dGeometry& g, const std::string& algorithms) {
  if (!cuda::detail::depthwise_kernels_apply(g)) return;
  EXPECT_EQ(algorithms, "scalebench depthwise / scalebench depthwise / scalebench depthwise, " +
                            std::to_string(cuda::depthwise_filter_blocks_here(g, 2, kLibraryWorkspace)) +
                            " blocks of partials")
      << "(block count as planned for 16-bit elements; fp32's may differ)";
}

TEST_P(CudaConv2d, ThreePassesMatchTheCpuInEveryPrecision) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  for (const Mode& mode : kModes) {
    SCOPED_TRACE(mode.name);
    const std::string algorithms = check_passes(GetParam(), mode);
    if (mode.dtype != DType::kFloat32) expect_depthwise_kernels(GetParam(), algorithms);
    // Padded channels are said in each pass's algorithm, exactly where conv2d_cudnn_in_channels pads them.
    const int64_t seen = conv2d_cudnn_in_channels(GetParam(), dtype_size(mode.dtype));
    const std::string said = "channels padded " + std::to_string(GetParam().in_c) + " -> " + std::to_string(seen);
    size_t times = 0;
    for (size_t at = algorithms.find(said); at != std::string::npos; at = algorithms.find(said, at + 1)) ++times;
    EXPECT_EQ(times, seen != GetParam().in_c ? 3u : 0u) << algorithms;
  }
}

TEST_P(CudaConv2d, ViewsAlignedToOneElementMatchTheCpu) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  if (!cuda::detail::depthwise_kernels_apply(GetParam())) GTEST_SKIP() << "cuDNN geometry: covered above";
  auto device = make_cuda_device(0);
  for (const Mode& mode : {kModes[0], kModes[2], kModes[3]}) {
    SCOPED_TRACE(mode.name);
    check_passes(GetParam(), mode, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CudaConv2d,
    ::testing::Values(geometry(2, 13, 11, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1),      // 3 x 3 "same"
                      geometry(2, 9, 9, 64, 24, 1, 1, 1, 1, 0, 0, 0, 0),        // pointwise
                      geometry(2, 12, 10, 8, 16, 3, 3, 2, 1, 0, 1, 0, 1),       // stride 2, TF "SAME" (asymmetric)
                      geometry(1, 11, 11, 16, 16, 3, 3, 2, 1, 1, 0, 1, 0),      // ZeroPad2d((1, 0, 1, 0)), stride 2
                      geometry(2, 17, 17, 16, 16, 3, 3, 1, 6, 6, 6, 6, 6),      // atrous rate 6
                      geometry(2, 21, 21, 32, 32, 5, 5, 2, 1, 2, 2, 2, 2, 32),  // depthwise 5 x 5 stride 2
                      geometry(2, 11, 11, 16, 16, 7, 7, 1, 1, 3, 3, 3, 3, 16),  // depthwise 7 x 7
                      geometry(1, 8, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 8),      // depthwise, multiplier 2
                      geometry(2, 9, 8, 12, 8, 3, 3, 1, 2, 2, 2, 2, 2, 4),      // grouped, dilated
                      geometry(2, 19, 19, 3, 32, 7, 7, 2, 1, 3, 3, 3, 3),       // ResNet stem 7 x 7 s2, C = 3
                      geometry(2, 22, 26, 36, 32, 7, 7, 1, 1, 0, 0, 0, 0),      // pix2pixHD G's first: C = 36
                      geometry(2, 16, 20, 39, 64, 4, 4, 2, 1, 2, 2, 2, 2),      // pix2pixHD D's first: C = 39
                      geometry(2, 12, 10, 12, 16, 3, 3, 2, 1, 0, 1, 0, 1)));    // C = 12, asymmetric padding

// The passes of the networks' common shapes run as cuDNN backend plans, or on scalebench's depthwise kernels
// (the legacy calls are the fallback): each legacy call cost ~200 us of host time on cuDNN 9, enough to leave
// the GPU idle.
TEST(CudaConv2dPlan, CommonShapesRunAsBackendPlans) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  for (const Conv2dGeometry& g : {geometry(16, 33, 33, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1),
                                  geometry(16, 33, 33, 1024, 256, 1, 1, 1, 1, 0, 0, 0, 0),
                                  geometry(16, 33, 33, 512, 512, 3, 3, 1, 2, 2, 2, 2, 2),
                                  geometry(64, 42, 42, 168, 168, 5, 5, 1, 1, 2, 2, 2, 2, 168)}) {
    for (const DType dtype : {DType::kBFloat16, DType::kFloat16}) {  // the mixed-precision training types
      const uint64_t workspace_bytes = conv2d_padded_copy_bytes(g, dtype_size(dtype)) + kLibraryWorkspace;
      for (const cuda::ConvPass pass :
           {cuda::ConvPass::kForward, cuda::ConvPass::kBackwardData, cuda::ConvPass::kBackwardFilter}) {
        const cuda::Conv2dRunner runner(g, dtype, false, pass, workspace_bytes);
        // Depthwise convolutions run on scalebench's kernels (other grouped ones keep the legacy call).
        const char* expected = g.groups == 1 ? "backend engine" : "scalebench depthwise";
        EXPECT_EQ(0u, runner.algorithm().rfind(expected, 0))
            << dtype_name(dtype) << " pass " << int(pass) << " in " << g.in_c << " out " << g.out_c << " k "
            << g.kernel_h << " groups " << g.groups << ": " << runner.algorithm();
      }
    }
  }
}

// Depthwise geometries of scalebench's kernels (NASNet's separable convolutions and their edge cases).
INSTANTIATE_TEST_SUITE_P(
    Depthwise, CudaConv2d,
    ::testing::Values(geometry(2, 13, 11, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 24),       // 3 x 3 s1, odd sizes
                      geometry(1, 11, 11, 16, 16, 3, 3, 2, 1, 1, 0, 1, 0, 16),       // ZeroPad2d((1, 0, 1, 0)), s2
                      geometry(2, 12, 10, 40, 40, 5, 5, 2, 1, 1, 2, 1, 2, 40),       // 5 x 5 s2 TF "SAME", even
                      geometry(2, 15, 13, 42, 42, 5, 5, 1, 1, 2, 2, 2, 2, 42),       // C = 42: 2-wide vectors
                      geometry(2, 9, 17, 84, 84, 7, 7, 2, 1, 3, 3, 3, 3, 84),        // C = 84, 7 x 7 s2
                      geometry(1, 17, 9, 5, 5, 3, 3, 2, 1, 1, 1, 1, 1, 5),           // C = 5: scalar path
                      geometry(1, 10, 9, 264, 264, 7, 7, 1, 1, 3, 3, 3, 3, 264),     // partial channel slices
                      geometry(1, 16, 15, 12, 12, 7, 7, 2, 1, 3, 0, 2, 1, 12),       // unpadded bottom/right
                      geometry(4, 42, 42, 96, 96, 5, 5, 1, 1, 2, 2, 2, 2, 96)));     // grid-stride over runs

// The backward filter's partial sums take the front of the workspace: as many blocks as fit, cuDNN when not one.
TEST(CudaConv2dDepthwise, FilterBlocksFollowTheWorkspace) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const Conv2dGeometry g = geometry(2, 15, 13, 42, 42, 5, 5, 1, 1, 2, 2, 2, 2, 42);
  const uint64_t one_block = cuda::detail::depthwise_filter_workspace_bytes(g, 1);
  const Mode& bf16 = kModes[2];
  const std::string one = check_passes(g, bf16, 0, one_block);
  EXPECT_NE(one.find("scalebench depthwise, 1 blocks of partials"), std::string::npos) << one;
  const std::string three = check_passes(g, bf16, 0, 3 * one_block + 100);
  EXPECT_NE(three.find("scalebench depthwise, 3 blocks of partials"), std::string::npos) << three;
  // 5,376 channels of 7 x 7: one block's partials are 1.05 MB, so 4 bytes less is still the 1 MiB of scratch the
  // graph builder always offers cuDNN.
  const Conv2dGeometry wide = geometry(1, 5, 4, 5376, 5376, 7, 7, 1, 1, 3, 3, 3, 3, 5376);
  const std::string none = check_passes(wide, bf16, 0, cuda::detail::depthwise_filter_workspace_bytes(wide, 1) - 4);
  EXPECT_EQ(none.find("partials"), std::string::npos) << none;  // the filter pass went to cuDNN
  EXPECT_EQ(none.rfind("scalebench depthwise / scalebench depthwise / ", 0), 0u) << none;
}

// Two convolutions with a bias, asymmetric "SAME" padding and a depthwise layer, through both executors.
TensorId conv_graph(GraphBuilder& b) {
  TensorId x = b.parameter("x", {2, 10, 9, 8});
  TensorId h = b.conv2d(x, b.parameter("w0", {16, 3, 3, 8}), b.parameter("b0", {16}), Conv2dOptions::same_padding(2));
  h = b.conv2d(h, b.parameter("dw", {16, 3, 3, 1}), kNoTensor, Conv2dOptions::with(1, 2, 2, 16));
  h = b.conv2d(h, b.parameter("pw", {4, 1, 1, 16}), b.parameter("b1", {4}));
  const int64_t rows = b.graph().tensor(h).elements() / 4;
  return b.softmax_cross_entropy(b.reshape(h, {rows, 4}), b.input("targets", {rows}, DType::kInt32), 0.0, -1);
}

TEST(CudaConv2dGraph, ExecutorMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::expect_gpu_matches_cpu(conv_graph, DType::kFloat32, kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu(conv_graph, DType::kBFloat16, kGraphBf16Tolerance);
}

// NASNet's separable branch on the depthwise kernels: ReLU, a 5 x 5 stride-2 TF-"SAME" depthwise (asymmetric
// on the even input) and a pointwise, then a 3 x 3 stride-1 depthwise and a pointwise; 42 channels (2-wide).
TensorId separable_graph(GraphBuilder& b) {
  TensorId h = b.relu(b.parameter("x", {2, 12, 10, 42}));
  h = b.conv2d(h, b.parameter("dw1", {42, 5, 5, 1}), kNoTensor, Conv2dOptions::same_padding(2, 1, 42));
  h = b.conv2d(h, b.parameter("pw1", {42, 1, 1, 42}), kNoTensor);
  h = b.conv2d(h, b.parameter("dw2", {42, 3, 3, 1}), kNoTensor, Conv2dOptions::with(1, 1, 1, 42));
  h = b.conv2d(h, b.parameter("pw2", {4, 1, 1, 42}), b.parameter("b2", {4}));
  const int64_t rows = b.graph().tensor(h).elements() / 4;
  return b.softmax_cross_entropy(b.reshape(h, {rows, 4}), b.input("targets", {rows}, DType::kInt32), 0.0, -1);
}

TEST(CudaConv2dGraph, SeparableBranchOnTheDepthwiseKernelsMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::expect_gpu_matches_cpu(separable_graph, DType::kFloat32, kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu(separable_graph, DType::kBFloat16, kGraphBf16Tolerance);
}

}  // namespace
}  // namespace sb
