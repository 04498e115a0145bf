// The CNN workloads' losses and drop-path on the GPU against the CPU reference: sb::cuda::yolo_loss_* at
// YOLOv3's 608² geometry (19/38/76 grids, 80 classes, 8 boxes per image with padding rows and a shared slot)
// in fp32 and bf16; drop-path dropping the same samples as the CPU; and graphs through both executors:
// conv heads → yolo_loss, DeepLab's bilinear ×8 → pixel-wise cross-entropy with label 255, and NASNet's
// label-smoothed CE + 0.4 x auxiliary CE.
// Run: gpu_tests --gtest_filter='CudaYoloLoss*:CudaDropPath*:CudaPixelCrossEntropy*:CudaWeightedLosses*'.
#include <gtest/gtest.h>

#include <random>
#include <type_traits>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/drop_path.h"
#include "src/cpu/yolo_loss.h"
#include "src/cuda/drop_path.h"
#include "src/cuda/yolo_loss.h"
#include "src/core/ops/yolo_loss.h"
#include "tests/gpu/cnn_graph_check.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

using test::CudaArray;

// The loss: ~7 · 10^4 fp32 terms summed in double (CPU: double terms): relative 1e-5. Gradients: each a few
// fp32 operations (expf, logf) against double: relative L2 1e-5; bf16 gradients rounded once: 1e-2.
constexpr double kFp32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1e-2;
constexpr double kGraphFp32Tolerance = 2e-4;  // 3 x 3 convolutions (cuDNN's Winograd/FFT: ~1e-5) before the loss
constexpr double kGraphBf16Tolerance = 3e-2;

// Eight boxes per image (shared/WORKLOADS.md §3) of random class, centre and size; the last image has two
// padding rows and two boxes in one slot.
std::vector<float> synthetic_truth(int64_t batch, int64_t boxes, int64_t classes, uint32_t seed, float min_size = 0.01f,
                                   float max_size = 0.7f) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> unit(0.02f, 0.98f), size(min_size, max_size);
  std::vector<float> truth;
  for (int64_t i = 0; i < batch * boxes; ++i) {
    truth.insert(truth.end(), {float(random() % classes), unit(random), unit(random), size(random), size(random)});
  }
  float* last = truth.data() + (batch - 1) * boxes * 5;
  last[3 * 5 + 3] = 0, last[4 * 5 + 3] = 0;                   // padding rows
  for (int k = 0; k < 5; ++k) last[6 * 5 + k] = last[5 * 5 + k];  // the same slot twice
  last[6 * 5] = float((int(last[5 * 5]) + 1) % classes);
  return truth;
}

template <typename T>
void check_yolo(double tolerance) {
  cpu::YoloGeometry g;
  g.batch = 2, g.classes = 80, g.boxes = 8, g.grid[0] = 19, g.grid[1] = 38, g.grid[2] = 76;
  const std::vector<float> truth = synthetic_truth(g.batch, g.boxes, g.classes, 7);
  std::vector<std::vector<float>> heads, dheads;
  for (int s = 0; s < 3; ++s) {
    std::vector<float> h = test::random_normal(size_t(g.batch * g.grid[s] * g.grid[s] * g.channels()), 110 + s, 0.7f);
    if constexpr (!std::is_same_v<T, float>) h = test::round_to_bf16(h).values;
    heads.push_back(h);
    dheads.emplace_back(h.size());
  }
  const float* hp[3] = {heads[0].data(), heads[1].data(), heads[2].data()};
  float* dp[3] = {dheads[0].data(), dheads[1].data(), dheads[2].data()};
  const double loss = cpu::yolo_loss_forward(hp, truth.data(), g);
  cpu::yolo_loss_backward(hp, truth.data(), dp, g, 1.0f);

  using Storage = std::conditional_t<std::is_same_v<T, float>, float, uint16_t>;
  std::vector<std::unique_ptr<CudaArray<Storage>>> d_heads, d_grads;
  for (int s = 0; s < 3; ++s) {
    if constexpr (std::is_same_v<T, float>) {
      d_heads.push_back(std::make_unique<CudaArray<float>>(heads[size_t(s)]));
    } else {
      d_heads.push_back(std::make_unique<CudaArray<uint16_t>>(test::bf16_bits_of(heads[size_t(s)])));
    }
    d_grads.push_back(std::make_unique<CudaArray<Storage>>(heads[size_t(s)].size()));
    d_grads.back()->poison();
  }
  auto p = [](const auto& a) { return reinterpret_cast<T*>(a->get()); };
  CudaArray<float> d_truth(truth), d_loss(1);
  CudaArray<unsigned char> workspace(size_t(yolo_workspace_bytes(g.batch, g.grid)));
  test::TestStream stream;
  cuda::yolo_loss_forward(p(d_heads[0]), p(d_heads[1]), p(d_heads[2]), d_truth.get(), d_loss.get(), g,
                          workspace.get(), stream.get());
  cuda::yolo_loss_backward(p(d_heads[0]), p(d_heads[1]), p(d_heads[2]), d_truth.get(), p(d_grads[0]), p(d_grads[1]),
                           p(d_grads[2]), g, 1.0f, workspace.get(), stream.get());
  stream.sync();
  EXPECT_NEAR(d_loss.download()[0], loss, kFp32Tolerance * loss);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> got;
    if constexpr (std::is_same_v<T, float>) {
      got = d_grads[size_t(s)]->download();
    } else {
      got = test::widen(d_grads[size_t(s)]->download());
    }
    ASSERT_GT(test::l2_norm(dheads[size_t(s)]), 0.0);
    EXPECT_EQ(test::count_non_finite(got), 0u) << "head " << s;
    EXPECT_LE(test::relative_l2(got, dheads[size_t(s)]), tolerance) << "head " << s;
  }
}

TEST(CudaYoloLoss, Fp32MatchesTheCpuAt608) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_yolo<float>(kFp32Tolerance);
}

TEST(CudaYoloLoss, Bf16MatchesTheCpuAt608) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_yolo<cuda::bf16>(kBf16Tolerance);
}

TEST(CudaDropPath, DropsTheCpusSamples) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  const int64_t batch = 64, per_sample = 21 * 21 * 8;
  const std::vector<float> x = test::random_normal(size_t(batch * per_sample), 120);
  std::vector<float> want(x.size());
  cpu::drop_path_forward(x.data(), want.data(), batch, per_sample, 0.3f, 99, 12345);
  CudaArray<float> d_x(x), d_y(x.size());
  d_y.poison();
  test::TestStream stream;
  cuda::drop_path_forward(d_x.get(), d_y.get(), batch, per_sample, 0.3f, 99, cuda::eager_value(12345), stream.get());
  stream.sync();
  EXPECT_EQ(d_y.download(), want) << "the same samples, one fp32 multiply each";
}

TensorId yolo_graph(GraphBuilder& b) {
  const int64_t channels = 3 * (5 + 4);
  const TensorId features = b.parameter("features", {2, 16, 16, 8});
  const TensorId h2 = b.conv2d(features, b.parameter("w2", {channels, 3, 3, 8}), b.parameter("b2", {channels}),
                               Conv2dOptions::same_padding());
  const TensorId h1 =
      b.conv2d(features, b.parameter("w1", {channels, 3, 3, 8}), kNoTensor, Conv2dOptions::same_padding(2));
  const TensorId h0 =
      b.conv2d(features, b.parameter("w0", {channels, 3, 3, 8}), kNoTensor, Conv2dOptions::same_padding(4));
  return b.yolo_loss(h0, h1, h2, b.input("truth", {2, 8, 5}), 4);
}

// The graph check writes int32 inputs only; the YOLO graph's fp32 truth is written here instead. The GPU's
// heads differ from the CPU's by bf16 rounding, which would move a prediction across the 0.7 ignore threshold
// if one sat near it (its objectness gradient then jumps by 1/2N): small weights keep every decoded box near
// its anchor (>= 0.013 of the image) and the boxes are at most 0.008 wide, so no IoU comes near 0.7.
void check_yolo_graph(DType compute, double tolerance) {
  test::BuiltGraph reference(yolo_graph, DType::kFloat32), tested(yolo_graph, compute);
  CpuExecutor cpu(reference.graph, reference.plan);
  LossScaleConfig off;
  off.mode = LossScaling::kOff;
  auto gpu = make_cuda_executor(tested.graph, tested.plan, false, off);
  const std::vector<float> truth = synthetic_truth(2, 8, 4, 9, 0.003f, 0.008f);
  cpu.write_tensor(reference.graph.find_tensor("truth"), truth.data(), truth.size() * 4);
  gpu->write_tensor(tested.graph.find_tensor("truth"), truth.data(), truth.size() * 4);
  uint32_t seed = 1;
  for (TensorId id : reference.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = reference.graph.tensor(id);
    const auto values = test::random_normal(size_t(info.elements()), seed++, 0.02f);
    cpu.write_tensor(id, values.data(), info.bytes());
    gpu->write_tensor(tested.graph.find_tensor(info.name), values.data(), info.bytes());
  }
  cpu.run();
  gpu->run();
  float want = 0, got = 0;
  cpu.read_tensor(reference.loss, &want, 4);
  gpu->read_tensor(tested.loss, &got, 4);
  EXPECT_NEAR(got, want, tolerance * want);
  for (const auto& [parameter, gradient] : reference.gradients) {
    const TensorInfo& info = reference.graph.tensor(parameter);
    std::vector<float> a(size_t(info.elements())), b(a.size());
    cpu.read_tensor(gradient, a.data(), info.bytes());
    gpu->read_tensor(tested.gradients.at(tested.graph.find_tensor(info.name)), b.data(), info.bytes());
    EXPECT_LE(test::relative_l2(b, a), tolerance) << info.name;
  }
}

TEST(CudaYoloLossGraph, ExecutorMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  check_yolo_graph(DType::kFloat32, kGraphFp32Tolerance);
  check_yolo_graph(DType::kBFloat16, kGraphBf16Tolerance);
}

// DeepLab's head: logits at 1/8 resolution, bilinear ×8, pixel-wise CE over 21 classes with label 255.
TensorId pixel_graph(GraphBuilder& b) {
  TensorId logits =
      b.conv2d(b.parameter("x", {2, 9, 9, 16}), b.parameter("w", {21, 1, 1, 16}), b.parameter("bias", {21}));
  logits = b.upsample_bilinear(logits, 72, 72, false);
  return b.softmax_cross_entropy(b.reshape(logits, {2 * 72 * 72, 21}), b.input("labels", {2 * 72 * 72}, DType::kInt32),
                                 0.0, 255);
}

TEST(CudaPixelCrossEntropyGraph, ExecutorMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  auto labels = [](const std::string&, size_t count) {
    std::vector<int32_t> values = test::random_ids(count, 77, 0, 20);
    for (size_t i = 0; i < count; i += 5) values[i] = 255;
    return values;
  };
  test::expect_gpu_matches_cpu(pixel_graph, DType::kFloat32, kGraphFp32Tolerance, labels);
  test::expect_gpu_matches_cpu(pixel_graph, DType::kBFloat16, kGraphBf16Tolerance, labels);
}

// NASNet's head and auxiliary head: label-smoothed CE + 0.4 x the auxiliary CE (a weighted sum of losses).
TensorId nasnet_heads(GraphBuilder& b) {
  const TensorId h = b.conv2d(b.parameter("features", {4, 17, 17, 8}), b.parameter("w", {16, 3, 3, 8}), kNoTensor,
                              Conv2dOptions::same_padding());
  const TensorId main_logits = b.linear(b.reshape(b.global_avg_pool(h), {4, 16}), b.parameter("fc", {5, 16}));
  const TensorId aux = b.global_avg_pool(b.conv2d(b.avg_pool2d(h, 5, Conv2dOptions::with(3, 0), false),
                                                  b.parameter("aux_w", {8, 1, 1, 16})));
  const TensorId aux_logits = b.linear(b.reshape(aux, {4, 8}), b.parameter("aux_fc", {5, 8}));
  const TensorId targets = b.input("labels", {4}, DType::kInt32);
  return b.add_losses(b.softmax_cross_entropy(main_logits, targets, 0.1, -1),
                      b.softmax_cross_entropy(aux_logits, targets, 0.0, -1), 0.4);
}

TEST(CudaWeightedLossesGraph, NasnetAuxiliaryHeadMatchesTheCpuFp32AndBf16) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  test::expect_gpu_matches_cpu(nasnet_heads, DType::kFloat32, kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu(nasnet_heads, DType::kBFloat16, kGraphBf16Tolerance);
}

}  // namespace
}  // namespace sb
