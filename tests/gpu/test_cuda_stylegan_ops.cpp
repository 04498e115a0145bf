// The CUDA kernels of StyleGAN's ops against the CPU reference (STYLE.md rules 2-4): blur, fill, minibatch
// stddev (forward, backward, second backward), the GAN losses, the fused conv weights, pixel norm, noise inputs,
// style modulation, style mixing and the weights' moving average; outputs poisoned (NaN) and written everywhere.
// Then a discriminator with the R1 penalty's double backward through both executors (loss and every gradient).
// The activation kernels again in bf16 and fp16 (CudaStyleGanOps16Bit: inputs representable in T, the CPU's fp32
// result on them, one rounding to T on store allowed). Skips without a GPU.
// Run: gpu_tests --gtest_filter='CudaStyleGan*'.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/cpu/blur.h"
#include "src/cpu/ema.h"
#include "src/cpu/fused_conv_weight.h"
#include "src/cpu/gan_losses.h"
#include "src/cpu/minibatch_stddev.h"
#include "src/cpu/noise_injection.h"
#include "src/cpu/optimizer.h"
#include "src/cpu/pixel_norm.h"
#include "src/cpu/style_mix.h"
#include "src/cpu/style_modulation.h"
#include "src/cuda/blur.h"
#include "src/cuda/fill.h"
#include "src/cuda/fused_conv_weight.h"
#include "src/cuda/gan_losses.h"
#include "src/cuda/minibatch_stddev.h"
#include "src/cuda/stylegan_g_ops.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/typed_storage.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

// Elementwise kernels and fixed-order double sums: within a few fp32 ulp of the CPU's double result rounded
// once (the blur sums nine fp32 products in fp32: ~4 ulp; the noise's log and cos differ in the last bits).
constexpr double kRtol = 2e-6;
constexpr double kAtol = 1e-6;
// Graphs: cuDNN's convolutions sum in other orders than the CPU's double loops (~1e-6 relative each), through
// the forward pass, the input gradient and its second backward.
constexpr double kGraphTolerance = 1e-4;

#define SKIP_WITHOUT_GPU() \
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible"

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                  double atol = kAtol, double rtol = kRtol) {
  EXPECT_EQ(test::count_unwritten(got), 0u) << what;
  EXPECT_GT(test::l2_norm(want), 0.0) << what;
  const auto cmp = test::compare_close(got, test::to_double(want), atol, rtol);
  EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.description;
}

// A poisoned device output of n floats.
struct Output : CudaArray<float> {
  explicit Output(size_t n) : CudaArray<float>(n) { poison(); }
};

// 6 channels blur one element per thread, 16 in 16-byte packs of channels.
TEST(CudaStyleGanOps, BlurAndFill) {
  SKIP_WITHOUT_GPU();
  for (int64_t c : {6, 16}) {
    const int64_t n = 2, h = 7, w = 5;
    const std::vector<float> x = test::random_normal(size_t(n * h * w * c), 1);
    std::vector<float> want(x.size());
    cpu::blur2d(x.data(), want.data(), n, h, w, c);
    CudaArray<float> d_x(x);
    Output d_y(x.size());
    TestStream stream;
    cuda::blur2d(d_x.get(), d_y.get(), n, h, w, c, stream.get());
    stream.sync();
    expect_close(d_y.download(), want, "blur2d, " + std::to_string(c) + " channels");
  }
  Output d_fill(37);
  TestStream stream;
  cuda::fill(d_fill.get(), 37, 1.5f, stream.get());
  stream.sync();
  EXPECT_EQ(d_fill.download(), std::vector<float>(37, 1.5f));
}

TEST(CudaStyleGanOps, MinibatchStddevAllThreePasses) {
  SKIP_WITHOUT_GPU();
  for (const auto& [batch, splits] : {std::pair<int64_t, int64_t>{8, 1}, {8, 2}, {6, 3}}) {
    cpu::MinibatchStddevGeometry g;
    g.batch = batch, g.height = 4, g.width = 4, g.channels = 33, g.splits = splits;
    g.group = std::min<int64_t>(4, batch / splits);
    const size_t xs = size_t(g.batch * g.positions()), ys = size_t(g.batch * 16 * (g.channels + 1));
    const std::vector<float> x = test::random_normal(xs, 2), dy = test::random_normal(ys, 3), u = test::random_normal(xs, 4);
    std::vector<float> y(ys), dx(xs), dx2(xs), ddy(ys);
    cpu::minibatch_stddev_forward(x.data(), y.data(), g);
    cpu::minibatch_stddev_backward(x.data(), dy.data(), dx.data(), g);
    cpu::minibatch_stddev_backward_backward(x.data(), dy.data(), u.data(), dx2.data(), ddy.data(), g);
    CudaArray<float> d_x(x), d_dy(dy), d_u(u);
    Output d_y(ys), d_dx(xs), d_dx2(xs), d_ddy(ys);
    TestStream stream;
    cuda::minibatch_stddev_forward(d_x.get(), d_y.get(), g, stream.get());
    cuda::minibatch_stddev_backward(d_x.get(), d_dy.get(), d_dx.get(), g, stream.get());
    cuda::minibatch_stddev_backward_backward(d_x.get(), d_dy.get(), d_u.get(), d_dx2.get(), d_ddy.get(), g, stream.get());
    stream.sync();
    const std::string what = "batch " + std::to_string(batch) + " splits " + std::to_string(splits);
    expect_close(d_y.download(), y, "forward " + what);
    expect_close(d_dx.download(), dx, "backward " + what);
    expect_close(d_dx2.download(), dx2, "second backward (x) " + what);
    expect_close(d_ddy.download(), ddy, "second backward (dy) " + what);
  }
}

TEST(CudaStyleGanOps, GanLossesAndFusedWeights) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> scores = test::random_normal(40, 5, 3.0f), g = test::random_normal(3000, 6);
  std::vector<float> dscores(40), dg(3000);
  const float loss = cpu::softplus_loss_forward(scores.data(), 40, -1.0f);
  cpu::softplus_loss_backward(scores.data(), dscores.data(), 40, -1.0f, 0.5f);
  const float r1 = cpu::squared_norm_loss_forward(g.data(), 3000, 4, 5.0f);
  cpu::squared_norm_loss_backward(g.data(), dg.data(), 3000, 4, 5.0f, 1.0f);
  const std::vector<float> w3 = test::random_normal(size_t(5 * 9 * 7), 7), dw4 = test::random_normal(size_t(5 * 16 * 7), 8);
  std::vector<float> w4(dw4.size()), dw3(w3.size());
  cpu::fused_conv_weight_forward(w3.data(), w4.data(), 5, 7, 0.25f);
  cpu::fused_conv_weight_backward(dw4.data(), dw3.data(), 5, 7, 1.0f);
  CudaArray<float> d_scores(scores), d_g(g), d_w3(w3), d_dw4(dw4);
  CudaArray<double> scratch(size_t(cpu::kGradNormScratchDoubles));
  Output d_loss(1), d_dscores(40), d_r1(1), d_dg(3000), d_w4(w4.size()), d_dw3(w3.size());
  TestStream stream;
  cuda::softplus_loss_forward(d_scores.get(), d_loss.get(), 40, -1.0f, stream.get());
  cuda::softplus_loss_backward(d_scores.get(), d_dscores.get(), 40, -1.0f, 0.5f, stream.get());
  cuda::squared_norm_loss_forward(d_g.get(), d_r1.get(), 3000, 4, 5.0f, scratch.get(), stream.get());
  cuda::squared_norm_loss_backward(d_g.get(), d_dg.get(), 3000, 4, 5.0f, 1.0f, stream.get());
  cuda::fused_conv_weight_forward(d_w3.get(), d_w4.get(), 5, 7, 0.25f, stream.get());
  cuda::fused_conv_weight_backward(d_dw4.get(), d_dw3.get(), 5, 7, 1.0f, stream.get());
  stream.sync();
  expect_close(d_loss.download(), {loss}, "softplus loss");
  expect_close(d_dscores.download(), dscores, "softplus backward");
  expect_close(d_r1.download(), {r1}, "squared norm loss");
  expect_close(d_dg.download(), dg, "squared norm backward");
  expect_close(d_w4.download(), w4, "fused weight");
  expect_close(d_dw3.download(), dw3, "fused weight backward");
}

TEST(CudaStyleGanOps, GeneratorOps) {
  SKIP_WITHOUT_GPU();
  // 4500 pixels: the backward sums run in 3 (style) and 4 (noise) chunks; 17 channels fill a tile partly.
  const int64_t batch = 3, pixels = 4500, channels = 17, dim = 12, layers = 5;
  const std::vector<float> x = test::random_normal(size_t(batch * pixels * channels), 9);
  const std::vector<float> dy = test::random_normal(x.size(), 10);
  const std::vector<float> style = test::random_normal(size_t(batch * 2 * channels), 11);
  const std::vector<float> weight = test::random_normal(size_t(channels), 12);
  const std::vector<int32_t> ids = {40, 7, 1000};
  const std::vector<float> rows = test::random_normal(size_t(2 * batch * dim), 13);
  // Pixel norm's gradient with dy along x is zero up to rounding: dy must be another vector.
  const std::vector<float> rows_dy = test::random_normal(size_t(2 * batch * dim), 113);
  const std::vector<int32_t> crossover = {1, 5, 3};
  std::vector<float> y_noise(x.size()), dweight(static_cast<size_t>(channels)), y_style(x.size()), dx_style(x.size());
  std::vector<float> dstyle(style.size()), y_pn(rows.size()), dx_pn(rows.size()), average(x.size(), 3.0f);
  cpu::noise_injection_forward(x.data(), weight.data(), ids.data(), y_noise.data(), batch, pixels, channels, 77, 12);
  cpu::noise_injection_backward(dy.data(), ids.data(), dweight.data(), batch, pixels, channels, 77, 12);
  cpu::style_modulation_forward(x.data(), style.data(), y_style.data(), batch, pixels, channels);
  cpu::style_modulation_backward(x.data(), style.data(), dy.data(), dx_style.data(), dstyle.data(), batch, pixels,
                                 channels);
  cpu::pixel_norm_forward(rows.data(), y_pn.data(), 2 * batch, dim);
  cpu::pixel_norm_backward(rows.data(), rows_dy.data(), dx_pn.data(), 2 * batch, dim);
  cpu::ema_update(x.data(), average.data(), int64_t(x.size()), 0.9f, false);
  std::vector<std::vector<float>> mixed(layers, std::vector<float>(size_t(batch * dim)));
  std::vector<float*> mixed_pointers;
  for (auto& m : mixed) mixed_pointers.push_back(m.data());
  cpu::style_mix_forward(rows.data(), crossover.data(), mixed_pointers.data(), layers, batch, dim);
  std::vector<const float*> dlayer_pointers;
  for (auto& m : mixed) dlayer_pointers.push_back(m.data());  // the mixed rows serve as layer gradients
  std::vector<float> dw(rows.size());
  cpu::style_mix_backward(dlayer_pointers.data(), crossover.data(), dw.data(), layers, batch, dim);

  CudaArray<float> d_x(x), d_dy(dy), d_style(style), d_weight(weight), d_rows(rows), d_rows_dy(rows_dy),
      d_average(std::vector<float>(x.size(), 3.0f));
  CudaArray<int32_t> d_ids(ids), d_crossover(crossover);
  Output d_noise(x.size()), d_dweight(static_cast<size_t>(channels)), d_ystyle(x.size()), d_dxstyle(x.size()), d_dstyle(style.size());
  Output d_pn(rows.size()), d_dpn(rows.size()), d_dw(rows.size());
  std::vector<std::unique_ptr<Output>> d_mixed;
  cuda::MutableLayerPointers out{};
  cuda::LayerPointers in{};
  for (int64_t l = 0; l < layers; ++l) {
    d_mixed.push_back(std::make_unique<Output>(size_t(batch * dim)));
    out.at[l] = d_mixed.back()->get();
    in.at[l] = d_mixed.back()->get();
  }
  TestStream stream;
  cuda::noise_injection_forward(d_x.get(), d_weight.get(), d_ids.get(), d_noise.get(), batch, pixels, channels, 77,
                                cuda::eager_value(12), stream.get());
  CudaArray<double> noise_partials(size_t(cpu::noise_injection_workspace_bytes(batch, pixels, channels)) / 8);
  CudaArray<double> style_partials(size_t(cpu::style_modulation_workspace_bytes(batch, pixels, channels)) / 8);
  cuda::noise_injection_backward(d_dy.get(), d_ids.get(), d_dweight.get(), noise_partials.get(), batch, pixels,
                                 channels, 77, cuda::eager_value(12), stream.get());
  cuda::style_modulation_forward(d_x.get(), d_style.get(), d_ystyle.get(), batch, pixels, channels, stream.get());
  cuda::style_modulation_backward(d_x.get(), d_style.get(), d_dy.get(), d_dxstyle.get(), d_dstyle.get(),
                                  style_partials.get(), batch, pixels,
                                  channels, stream.get());
  cuda::pixel_norm_forward(d_rows.get(), d_pn.get(), 2 * batch, dim, stream.get());
  cuda::pixel_norm_backward(d_rows.get(), d_rows_dy.get(), d_dpn.get(), 2 * batch, dim, stream.get());
  cuda::ema_update(d_x.get(), d_average.get(), int64_t(x.size()), 0.9f, cuda::eager_value(1),  // not the first step
                   stream.get());
  cuda::style_mix_forward(d_rows.get(), d_crossover.get(), out, layers, batch, dim, stream.get());
  cuda::style_mix_backward(in, d_crossover.get(), d_dw.get(), layers, batch, dim, stream.get());
  stream.sync();
  expect_close(d_noise.download(), y_noise, "noise injection");
  expect_close(d_dweight.download(), dweight, "noise weight gradient", 1e-5, 1e-5);
  expect_close(d_ystyle.download(), y_style, "style modulation");
  expect_close(d_dxstyle.download(), dx_style, "style modulation dx");
  expect_close(d_dstyle.download(), dstyle, "style modulation dstyle");
  expect_close(d_pn.download(), y_pn, "pixel norm");
  expect_close(d_dpn.download(), dx_pn, "pixel norm backward");
  expect_close(d_average.download(), average, "ema");
  for (int64_t l = 0; l < layers; ++l) expect_close(d_mixed[size_t(l)]->download(), mixed[size_t(l)], "style mix");
  expect_close(d_dw.download(), dw, "style mix backward");
}

// A device array of n elements of T, poisoned (NaN patterns) or holding values.
template <typename T>
struct Typed {
  test::CudaArray<test::Storage<T>> array;
  explicit Typed(size_t n) : array(n) { array.poison(); }
  explicit Typed(const std::vector<float>& values) : array(test::to_storage<T>(values)) {}
  T* get() const { return reinterpret_cast<T*>(array.get()); }
  std::vector<float> download() const { return test::from_storage<T>(array.download()); }
};

// One rounding to T of an fp32 result: relative 2^-8 (bf16) or 2^-11 (fp16) of each value, and as much of the
// output's RMS for values that cancel (sums over pixels, the stddev's centred terms).
template <typename T>
void expect_close_16(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  const double rtol = std::is_same_v<T, cuda::bf16> ? 1.0 / 128 : 1.0 / 1024;
  const double rms = test::l2_norm(want) / std::sqrt(double(want.size()));
  EXPECT_EQ(test::count_unwritten(got), 0u) << what;
  EXPECT_GT(rms, 0.0) << what;
  const auto cmp = test::compare_close(got, test::to_double(want), rtol * rms, rtol);
  EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.description;
}

template <typename T>
class CudaStyleGanOps16Bit : public ::testing::Test {};
using SixteenBit = ::testing::Types<cuda::bf16, cuda::fp16>;
TYPED_TEST_SUITE(CudaStyleGanOps16Bit, SixteenBit);

TYPED_TEST(CudaStyleGanOps16Bit, BlurFillStddevAndFusedWeights) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  const int64_t n = 8, h = 4, w = 4, c = 33;
  cpu::MinibatchStddevGeometry g;
  g.batch = n, g.height = h, g.width = w, g.channels = c, g.splits = 2, g.group = 4;
  const size_t xs = size_t(n * h * w * c), ys = size_t(n * h * w * (c + 1));
  const std::vector<float> x = test::representable<T>(test::random_normal(xs, 21));
  const std::vector<float> dy = test::representable<T>(test::random_normal(ys, 22));
  const std::vector<float> u = test::representable<T>(test::random_normal(xs, 23));
  std::vector<float> blurred(xs), y(ys), dx(xs), dx2(xs), ddy(ys);
  cpu::blur2d(x.data(), blurred.data(), n, h, w, c);
  cpu::minibatch_stddev_forward(x.data(), y.data(), g);
  cpu::minibatch_stddev_backward(x.data(), dy.data(), dx.data(), g);
  cpu::minibatch_stddev_backward_backward(x.data(), dy.data(), u.data(), dx2.data(), ddy.data(), g);
  const std::vector<float> w3 = test::representable<T>(test::random_normal(size_t(5 * 9 * 7), 24));
  const std::vector<float> dw4 = test::representable<T>(test::random_normal(size_t(5 * 16 * 7), 25));
  std::vector<float> w4(dw4.size()), dw3(w3.size());
  cpu::fused_conv_weight_forward(w3.data(), w4.data(), 5, 7, 0.25f);
  cpu::fused_conv_weight_backward(dw4.data(), dw3.data(), 5, 7, 0.25f);
  Typed<T> d_x(x), d_dy(dy), d_u(u), d_w3(w3), d_dw4(dw4);
  Typed<T> d_blur(xs), d_fill(37), d_y(ys), d_dx(xs), d_dx2(xs), d_ddy(ys), d_w4(w4.size()), d_dw3(w3.size());
  TestStream stream;
  cuda::blur2d(d_x.get(), d_blur.get(), n, h, w, c, stream.get());
  cuda::fill(d_fill.get(), 37, 1.5f, stream.get());
  cuda::minibatch_stddev_forward(d_x.get(), d_y.get(), g, stream.get());
  cuda::minibatch_stddev_backward(d_x.get(), d_dy.get(), d_dx.get(), g, stream.get());
  cuda::minibatch_stddev_backward_backward(d_x.get(), d_dy.get(), d_u.get(), d_dx2.get(), d_ddy.get(), g, stream.get());
  cuda::fused_conv_weight_forward(d_w3.get(), d_w4.get(), 5, 7, 0.25f, stream.get());
  cuda::fused_conv_weight_backward(d_dw4.get(), d_dw3.get(), 5, 7, 0.25f, stream.get());
  stream.sync();
  expect_close_16<T>(d_blur.download(), blurred, "blur2d");
  EXPECT_EQ(d_fill.download(), std::vector<float>(37, 1.5f));
  expect_close_16<T>(d_y.download(), y, "minibatch stddev");
  expect_close_16<T>(d_dx.download(), dx, "minibatch stddev backward");
  expect_close_16<T>(d_dx2.download(), dx2, "minibatch stddev second backward (x)");
  expect_close_16<T>(d_ddy.download(), ddy, "minibatch stddev second backward (dy)");
  expect_close_16<T>(d_w4.download(), w4, "fused weight");
  expect_close_16<T>(d_dw3.download(), dw3, "fused weight backward");
}

TYPED_TEST(CudaStyleGanOps16Bit, GeneratorOps) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  const int64_t batch = 3, pixels = 2100, channels = 17, dim = 12, layers = 5;  // two chunks each
  const std::vector<float> x = test::representable<T>(test::random_normal(size_t(batch * pixels * channels), 31));
  const std::vector<float> dy = test::representable<T>(test::random_normal(x.size(), 32));
  const std::vector<float> style = test::representable<T>(test::random_normal(size_t(batch * 2 * channels), 33));
  const std::vector<float> weight = test::random_normal(size_t(channels), 34);  // fp32 parameter
  const std::vector<int32_t> ids = {40, 7, 1000};
  const std::vector<float> rows = test::representable<T>(test::random_normal(size_t(2 * batch * dim), 35));
  const std::vector<float> rows_dy = test::representable<T>(test::random_normal(size_t(2 * batch * dim), 135));
  const std::vector<int32_t> crossover = {1, 5, 3};
  std::vector<float> y_noise(x.size()), dweight(static_cast<size_t>(channels)), y_style(x.size()), dx_style(x.size());
  std::vector<float> dstyle(style.size()), y_pn(rows.size()), dx_pn(rows.size());
  cpu::noise_injection_forward(x.data(), weight.data(), ids.data(), y_noise.data(), batch, pixels, channels, 77, 12);
  cpu::noise_injection_backward(dy.data(), ids.data(), dweight.data(), batch, pixels, channels, 77, 12);
  cpu::style_modulation_forward(x.data(), style.data(), y_style.data(), batch, pixels, channels);
  cpu::style_modulation_backward(x.data(), style.data(), dy.data(), dx_style.data(), dstyle.data(), batch, pixels,
                                 channels);
  cpu::pixel_norm_forward(rows.data(), y_pn.data(), 2 * batch, dim);
  cpu::pixel_norm_backward(rows.data(), rows_dy.data(), dx_pn.data(), 2 * batch, dim);
  std::vector<std::vector<float>> mixed(layers, std::vector<float>(size_t(batch * dim)));
  std::vector<float*> mixed_pointers;
  for (auto& m : mixed) mixed_pointers.push_back(m.data());
  cpu::style_mix_forward(rows.data(), crossover.data(), mixed_pointers.data(), layers, batch, dim);
  std::vector<const float*> dlayer_pointers;
  for (auto& m : mixed) dlayer_pointers.push_back(m.data());
  std::vector<float> dw(rows.size());
  cpu::style_mix_backward(dlayer_pointers.data(), crossover.data(), dw.data(), layers, batch, dim);

  Typed<T> d_x(x), d_dy(dy), d_style(style), d_rows(rows), d_rows_dy(rows_dy);
  CudaArray<float> d_weight(weight);
  CudaArray<int32_t> d_ids(ids), d_crossover(crossover);
  Typed<T> d_noise(x.size()), d_ystyle(x.size()), d_dxstyle(x.size()), d_dstyle(style.size());
  Typed<T> d_pn(rows.size()), d_dpn(rows.size()), d_dw(rows.size());
  Output d_dweight(static_cast<size_t>(channels));
  std::vector<std::unique_ptr<Typed<T>>> d_mixed;
  cuda::MutableLayerPointers out{};
  cuda::LayerPointers in{};
  for (int64_t l = 0; l < layers; ++l) {
    d_mixed.push_back(std::make_unique<Typed<T>>(size_t(batch * dim)));
    out.at[l] = d_mixed.back()->get();
    in.at[l] = d_mixed.back()->get();
  }
  TestStream stream;
  cuda::noise_injection_forward(d_x.get(), d_weight.get(), d_ids.get(), d_noise.get(), batch, pixels, channels, 77,
                                cuda::eager_value(12), stream.get());
  CudaArray<double> noise_partials(size_t(cpu::noise_injection_workspace_bytes(batch, pixels, channels)) / 8);
  CudaArray<double> style_partials(size_t(cpu::style_modulation_workspace_bytes(batch, pixels, channels)) / 8);
  cuda::noise_injection_backward(d_dy.get(), d_ids.get(), d_dweight.get(), noise_partials.get(), batch, pixels,
                                 channels, 77, cuda::eager_value(12), stream.get());
  cuda::style_modulation_forward(d_x.get(), d_style.get(), d_ystyle.get(), batch, pixels, channels, stream.get());
  cuda::style_modulation_backward(d_x.get(), d_style.get(), d_dy.get(), d_dxstyle.get(), d_dstyle.get(),
                                  style_partials.get(), batch, pixels,
                                  channels, stream.get());
  cuda::pixel_norm_forward(d_rows.get(), d_pn.get(), 2 * batch, dim, stream.get());
  cuda::pixel_norm_backward(d_rows.get(), d_rows_dy.get(), d_dpn.get(), 2 * batch, dim, stream.get());
  cuda::style_mix_forward(d_rows.get(), d_crossover.get(), out, layers, batch, dim, stream.get());
  cuda::style_mix_backward(in, d_crossover.get(), d_dw.get(), layers, batch, dim, stream.get());
  stream.sync();
  expect_close_16<T>(d_noise.download(), y_noise, "noise injection");
  expect_close(d_dweight.download(), dweight, "noise weight gradient (fp32, from 16-bit dy)", 1e-5, 1e-5);
  expect_close_16<T>(d_ystyle.download(), y_style, "style modulation");
  expect_close_16<T>(d_dxstyle.download(), dx_style, "style modulation dx");
  expect_close_16<T>(d_dstyle.download(), dstyle, "style modulation dstyle");
  expect_close_16<T>(d_pn.download(), y_pn, "pixel norm");
  expect_close_16<T>(d_dpn.download(), dx_pn, "pixel norm backward");
  for (int64_t l = 0; l < layers; ++l) EXPECT_EQ(d_mixed[size_t(l)]->download(), mixed[size_t(l)]) << "style mix (a copy)";
  expect_close_16<T>(d_dw.download(), dw, "style mix backward");
}

// Rows of fewer than 32 16-byte packs take the packed noise kernels: 16 and 32 channels (2 and 4 bf16 packs; 4 and 8
// float packs), 24 (3 packs, lanes left over), 40 (5 bf16 packs; 10 float packs), 6 (one element a lane). Style
// modulation's elementwise passes take packs at every width but 6. 2100 pixels: a partial last run of 32
// pixels, two backward chunks.
template <typename T>
void check_noise_and_style_widths() {
  const int64_t batch = 3, pixels = 2100;
  const std::vector<int32_t> ids = {40, 7, 1000};
  for (const int64_t channels : {16, 32, 24, 40, 6}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    const std::vector<float> x = test::representable<T>(test::random_normal(size_t(batch * pixels * channels), 61));
    const std::vector<float> dy = test::representable<T>(test::random_normal(x.size(), 62));
    const std::vector<float> weight = test::random_normal(size_t(channels), 63);
    const std::vector<float> style = test::representable<T>(test::random_normal(size_t(batch * 2 * channels), 64));
    std::vector<float> y(x.size()), dweight(static_cast<size_t>(channels)), y_style(x.size()), dx_style(x.size());
    std::vector<float> dstyle(style.size());
    cpu::noise_injection_forward(x.data(), weight.data(), ids.data(), y.data(), batch, pixels, channels, 77, 12);
    cpu::noise_injection_backward(dy.data(), ids.data(), dweight.data(), batch, pixels, channels, 77, 12);
    cpu::style_modulation_forward(x.data(), style.data(), y_style.data(), batch, pixels, channels);
    cpu::style_modulation_backward(x.data(), style.data(), dy.data(), dx_style.data(), dstyle.data(), batch, pixels,
                                   channels);

    Typed<T> d_x(x), d_dy(dy), d_y(x.size()), d_style(style), d_ystyle(x.size()), d_dxstyle(x.size());
    Typed<T> d_dstyle(style.size());
    CudaArray<float> d_weight(weight);
    CudaArray<int32_t> d_ids(ids);
    Output d_dweight(static_cast<size_t>(channels));
    CudaArray<double> partials(size_t(cpu::noise_injection_workspace_bytes(batch, pixels, channels)) / 8);
    CudaArray<double> style_partials(size_t(cpu::style_modulation_workspace_bytes(batch, pixels, channels)) / 8);
    TestStream stream;
    cuda::noise_injection_forward(d_x.get(), d_weight.get(), d_ids.get(), d_y.get(), batch, pixels, channels, 77,
                                  cuda::eager_value(12), stream.get());
    cuda::noise_injection_backward(d_dy.get(), d_ids.get(), d_dweight.get(), partials.get(), batch, pixels, channels,
                                   77, cuda::eager_value(12), stream.get());
    cuda::style_modulation_forward(d_x.get(), d_style.get(), d_ystyle.get(), batch, pixels, channels, stream.get());
    cuda::style_modulation_backward(d_x.get(), d_style.get(), d_dy.get(), d_dxstyle.get(), d_dstyle.get(),
                                    style_partials.get(), batch, pixels, channels, stream.get());
    stream.sync();
    const std::pair<const Typed<T>*, const std::vector<float>*> outputs[] = {
        {&d_y, &y}, {&d_ystyle, &y_style}, {&d_dxstyle, &dx_style}, {&d_dstyle, &dstyle}};
    const char* names[] = {"noise injection", "style modulation", "style modulation dx", "style modulation dstyle"};
    for (size_t k = 0; k < 4; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        expect_close(outputs[k].first->download(), *outputs[k].second, names[k]);
      } else {
        expect_close_16<T>(outputs[k].first->download(), *outputs[k].second, names[k]);
      }
    }
    expect_close(d_dweight.download(), dweight, "noise weight gradient", 1e-5, 1e-5);
  }
}

TEST(CudaStyleGanOps, NoiseAndStyleInPacksOfChannels) {
  SKIP_WITHOUT_GPU();
  check_noise_and_style_widths<float>();
}

TYPED_TEST(CudaStyleGanOps16Bit, NoiseAndStyleInPacksOfChannels) {
  SKIP_WITHOUT_GPU();
  check_noise_and_style_widths<TypeParam>();
}

// A discriminator on 16 x 16 images with the ops of D's path and the R1 penalty, through both executors.
TEST(CudaStyleGanGraph, DiscriminatorWithR1MatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  auto device = make_cuda_device(0);
  struct Built {
    Graph graph;
    TensorId loss = kNoTensor, images = kNoTensor;
    std::map<TensorId, TensorId> gradients;
    MemoryPlan plan;
  } cpu_graph, gpu_graph;
  for (Built* built : {&cpu_graph, &gpu_graph}) {
    GraphBuilder b(built->graph);
    const int64_t c = 8;
    auto conv = [&](TensorId h, const std::string& name, int64_t out, int64_t k, int64_t in, int64_t stride) {
      // A stride-2 conv is the fused 4 x 4 down-conv built from its 3 x 3 weight (the only parameter it has).
      const TensorId w =
          stride == 2 ? b.fused_conv_weight(b.scale(b.parameter(name + ".weight3", {out, 3, 3, in}), 0.1), true)
                      : b.scale(b.parameter(name + ".weight", {out, k, k, in}), std::sqrt(2.0 / double(k * k * in)));
      return b.leaky_relu(b.conv2d(h, w, b.parameter(name + ".bias", {out}), Conv2dOptions::with(stride, stride == 2 ? 1 : k / 2)),
                          0.2);
    };
    built->images = b.input("images", {4, 16, 16, 3});
    TensorId h = conv(built->images, "fromrgb", c, 1, 3, 1);
    h = conv(b.blur2d(conv(h, "b16.conv0", c, 3, c, 1)), "b16.down", c, 4, c, 2);
    h = b.avg_pool2d(b.blur2d(conv(h, "b8.conv0", c, 3, c, 1)), 2, Conv2dOptions::with(2, 0), true);
    h = conv(b.minibatch_stddev(h, 4), "final", c, 3, c + 1, 1);
    const TensorId scores = b.linear(b.reshape(h, {4, 16 * c}), b.parameter("dense.weight", {1, 16 * c}),
                                     b.parameter("dense.bias", {1}));
    const TensorId gradient = append_input_gradient(built->graph, scores, built->images);
    built->loss = b.add_losses(b.softplus_loss(scores, -1.0), b.squared_norm_loss(gradient, 5.0));
    built->gradients = append_backward(built->graph, built->loss);
    built->plan = plan_memory(built->graph);
  }
  CpuExecutor cpu(cpu_graph.graph, cpu_graph.plan);
  std::unique_ptr<Executor> gpu = make_cuda_executor(gpu_graph.graph, gpu_graph.plan);
  uint32_t seed = 300;
  for (TensorId id : cpu_graph.graph.tensors_with_role(TensorRole::kParameter)) {
    const TensorInfo& info = cpu_graph.graph.tensor(id);
    const std::vector<float> values = test::random_normal(size_t(info.elements()), seed++, 0.5f);
    cpu.write_tensor(id, values.data(), info.bytes());
    gpu->write_tensor(id, values.data(), info.bytes());  // both graphs were built alike: the same ids
  }
  const std::vector<float> images = test::random_normal(4 * 16 * 16 * 3, seed++);
  cpu.write_tensor(cpu_graph.images, images.data(), images.size() * 4);
  gpu->write_tensor(gpu_graph.images, images.data(), images.size() * 4);
  cpu.run();
  gpu->run();
  float cpu_loss = 0, gpu_loss = 0;
  cpu.read_tensor(cpu_graph.loss, &cpu_loss, 4);
  gpu->read_tensor(gpu_graph.loss, &gpu_loss, 4);
  EXPECT_NEAR(gpu_loss, cpu_loss, kGraphTolerance * std::fabs(cpu_loss));
  for (const auto& [parameter, gradient] : cpu_graph.gradients) {
    const TensorInfo& info = cpu_graph.graph.tensor(parameter);
    std::vector<float> want(size_t(info.elements())), got(want.size());
    cpu.read_tensor(gradient, want.data(), info.bytes());
    gpu->read_tensor(gpu_graph.gradients.at(parameter), got.data(), info.bytes());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i) diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]), norm += double(want[i]) * want[i];
    EXPECT_GT(norm, 0.0) << info.name;
    EXPECT_LE(std::sqrt(diff / norm), kGraphTolerance) << "gradient of " << info.name;
  }
}

}  // namespace
}  // namespace sb
