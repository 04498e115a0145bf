// The CUDA kernels of Mask R-CNN's ops against the CPU references (STYLE.md rules 2-4): FrozenBatchNorm, RoIAlign
// forward and backward (fp32 and bf16 maps), the two losses (class columns, the loss-scale seed), anchors, top-k
// per level, bitmask NMS, the whole proposal stage (exact with undecoded anchors; decoded boxes within an ulp or
// two of expf), anchor and RoI target assignment (the same draws: identical labels, samples and masks) and mask
// targets; outputs poisoned first. Then the mask predictor at full width (the 2 x 2 stride-2 transposed conv, 256
// channels, through conv_transpose2d) and the tiny maskrcnn workload through both executors (fp32: loss and every
// gradient; bf16: finite). Skips without a GPU. Run: gpu_tests --gtest_filter='CudaDetection*:CudaMaskRcnn*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/planner.h"
#include "scalebench/workload.h"
#include "src/cpu/detection_losses.h"
#include "src/cpu/detection_targets.h"
#include "src/cpu/frozen_affine.h"
#include "src/cpu/proposals.h"
#include "src/cpu/roi_align.h"
#include "src/cuda/detection_losses.h"
#include "src/cuda/detection_targets.h"
#include "src/cuda/frozen_affine.h"
#include "src/cuda/proposals.h"
#include "src/cuda/roi_align.h"
#include "tests/gpu/cnn_graph_check.h"
#include "tests/support/bf16_data.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

// ---------------------------------------------------------------- tolerances
// fp32 kernels that compute what the CPU computes in another order (RoIAlign's atomics, fp32 sums where the CPU
// sums in double, FMA contraction): a few ulp of the magnitudes summed.
constexpr double kFp32Rtol = 1e-5;
constexpr double kFp32Atol = 1e-6;
// bf16 inputs rounded on the host first (the CPU sees the same values); the bf16 output rounds once more.
constexpr double kBf16Rtol = 1.0 / 128;
constexpr double kBf16Atol = 1e-3;
// Decoded boxes: expf within 2 ulp, times box sizes of up to 64 pixels.
constexpr double kBoxAtol = 1e-3;
// The tiny workload's loss and gradients (cuDNN and cuBLAS sum in other orders), relative L2.
constexpr double kGraphFp32Tolerance = 1e-3;

bool no_gpu() { return visible_cuda_device_count() == 0; }

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(test::count_non_finite(got), 0u) << what << ": unwritten or non-finite outputs";
  size_t worst = 0;
  double excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]) - (atol + rtol * std::fabs(want[i]));
    if (e > excess) excess = e, worst = i;
  }
  EXPECT_LE(excess, 0.0) << what << ": worst element " << worst << " got " << got[worst] << " want " << want[worst];
}

std::vector<float> rounded_bf16(const std::vector<float>& values) { return test::round_to_bf16(values).values; }

// 67 channels run one element per thread, 64 run 16-byte packs (4 fp32 or 8 bf16 channels).
TEST(CudaDetection, FrozenAffine) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  for (int64_t channels : {67, 64}) {
    const int64_t rows = 333;
    const std::vector<float> x = test::random_normal(size_t(rows * channels), 1),
                             scale = test::random_normal(size_t(channels), 2),
                             shift = test::random_normal(size_t(channels), 3),
                             dy = test::random_normal(size_t(rows * channels), 4);
    for (bool relu : {false, true}) {
      SCOPED_TRACE(std::to_string(channels) + (relu ? " channels, relu" : " channels"));
      std::vector<float> y(x.size()), dx(x.size());
      cpu::frozen_affine_forward(x.data(), scale.data(), shift.data(), y.data(), rows, channels, relu);
      cpu::frozen_affine_backward(dy.data(), y.data(), scale.data(), dx.data(), rows, channels, relu);
      TestStream stream;
      CudaArray<float> dx_(x), ds(scale), dsh(shift), dy_(dy), dy_out(x.size()), dgrad(x.size());
      dy_out.poison(), dgrad.poison();
      cuda::frozen_affine_forward(dx_.get(), ds.get(), dsh.get(), dy_out.get(), rows, channels, relu, stream.get());
      cuda::frozen_affine_backward(dy_.get(), dy_out.get(), ds.get(), dgrad.get(), rows, channels, relu, stream.get());
      stream.sync();
      expect_close(dy_out.download(), y, kFp32Atol, kFp32Rtol, "frozen_affine y");
      expect_close(dgrad.download(), dx, kFp32Atol, kFp32Rtol, "frozen_affine dx");
      EXPECT_GT(test::l2_norm(y), 0.0);
    }
  }
}

// bf16 storage: the CPU computes from the same rounded inputs (and the GPU's rounded output for dx's mask).
TEST(CudaDetection, FrozenAffineBf16) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  for (int64_t channels : {67, 64}) {
    const int64_t rows = 333;
    const std::vector<float> x = rounded_bf16(test::random_normal(size_t(rows * channels), 1)),
                             scale = test::random_normal(size_t(channels), 2),
                             shift = test::random_normal(size_t(channels), 3),
                             dy = rounded_bf16(test::random_normal(size_t(rows * channels), 4));
    for (bool relu : {false, true}) {
      SCOPED_TRACE(std::to_string(channels) + (relu ? " channels, relu" : " channels"));
      std::vector<float> y(x.size()), dx(x.size());
      cpu::frozen_affine_forward(x.data(), scale.data(), shift.data(), y.data(), rows, channels, relu);
      TestStream stream;
      CudaArray<uint16_t> x_(test::bf16_bits_of(x)), dy_(test::bf16_bits_of(dy)), y_(x.size()), dx_(x.size());
      CudaArray<float> ds(scale), dsh(shift);
      y_.poison(), dx_.poison();
      cuda::frozen_affine_forward(test::as_bf16(x_.get()), ds.get(), dsh.get(), test::as_bf16(y_.get()), rows,
                                  channels, relu, stream.get());
      cuda::frozen_affine_backward(test::as_bf16(dy_.get()), test::as_bf16(y_.get()), ds.get(),
                                   test::as_bf16(dx_.get()), rows, channels, relu, stream.get());
      stream.sync();
      const std::vector<float> got_y = test::widen(y_.download());
      cpu::frozen_affine_backward(dy.data(), got_y.data(), scale.data(), dx.data(), rows, channels, relu);
      expect_close(got_y, y, kBf16Atol, kBf16Rtol, "frozen_affine bf16 y");
      expect_close(test::widen(dx_.download()), dx, kBf16Atol, kBf16Rtol, "frozen_affine bf16 dx");
    }
  }
}

// Two levels (P2 24 x 20, P3 12 x 10 of a 96 x 80 image), RoIs from a few pixels to past the image; 37 channels
// run one channel per thread, 40 run 16-byte packs of channels (4 fp32 or 8 bf16).
struct RoiCase {
  cpu::RoiAlignGeometry g;
  std::vector<float> p2, p3, rois;
  explicit RoiCase(int64_t channels) {
    g.batch = 2, g.channels = channels, g.rois = 41, g.output_size = 7, g.levels = 2, g.first_level = 2;
    g.height[0] = 24, g.width[0] = 20, g.height[1] = 12, g.width[1] = 10;
    p2 = test::random_normal(size_t(2 * 24 * 20 * channels), 10);
    p3 = test::random_normal(size_t(2 * 12 * 10 * channels), 11);
    const std::vector<float> u = test::random_uniform(size_t(g.rois * 4), 12, -10.0f, 100.0f);
    for (int64_t r = 0; r < g.rois; ++r) {
      const float* c = &u[size_t(r * 4)];
      const float grow = r % 3 == 0 ? 150.0f : 0.0f;  // large RoIs pool from P3
      rois.insert(rois.end(), {float(r % 2), std::min(c[0], c[2]), std::min(c[1], c[3]), std::max(c[0], c[2]) + grow,
                               std::max(c[1], c[3]) + grow});
    }
  }
};

TEST(CudaDetection, RoiAlignFp32) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  for (int64_t channels : {37, 40}) {
    SCOPED_TRACE(channels);
    RoiCase c(channels);
    const size_t out = size_t(c.g.rois * 49 * c.g.channels);
    const std::vector<float> dy = test::random_normal(out, 13);
    std::vector<float> y(out), d2(c.p2.size()), d3(c.p3.size());
    const float* levels[2] = {c.p2.data(), c.p3.data()};
    float* dlevels[2] = {d2.data(), d3.data()};
    cpu::roi_align_forward(levels, c.rois.data(), y.data(), c.g);
    cpu::roi_align_backward(dy.data(), c.rois.data(), dlevels, c.g);
    TestStream stream;
    CudaArray<float> p2(c.p2), p3(c.p3), rois(c.rois), dy_(dy), y_(out), g2(c.p2.size()), g3(c.p3.size());
    y_.poison(), g2.poison(), g3.poison();
    const float* dev_levels[2] = {p2.get(), p3.get()};
    float* dev_grads[2] = {g2.get(), g3.get()};
    cuda::roi_align_forward(dev_levels, rois.get(), y_.get(), c.g, stream.get());
    cuda::roi_align_backward(dy_.get(), rois.get(), dev_grads, c.g, stream.get());
    stream.sync();
    expect_close(y_.download(), y, kFp32Atol, kFp32Rtol, "roi_align y");
    expect_close(g2.download(), d2, 1e-5, kFp32Rtol, "roi_align dP2");
    expect_close(g3.download(), d3, 1e-5, kFp32Rtol, "roi_align dP3");
    EXPECT_GT(test::l2_norm(d3), 0.0) << "some RoIs pool from P3";
  }
}

TEST(CudaDetection, RoiAlignBf16) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  for (int64_t channels : {37, 40}) {
    SCOPED_TRACE(channels);
    RoiCase c(channels);
    c.p2 = rounded_bf16(c.p2), c.p3 = rounded_bf16(c.p3);
    const size_t out = size_t(c.g.rois * 49 * c.g.channels);
    const std::vector<float> dy = rounded_bf16(test::random_normal(out, 13));
    std::vector<float> y(out), d2(c.p2.size()), d3(c.p3.size());
    const float* levels[2] = {c.p2.data(), c.p3.data()};
    float* dlevels[2] = {d2.data(), d3.data()};
    cpu::roi_align_forward(levels, c.rois.data(), y.data(), c.g);
    cpu::roi_align_backward(dy.data(), c.rois.data(), dlevels, c.g);
    TestStream stream;
    CudaArray<uint16_t> p2(test::bf16_bits_of(c.p2)), p3(test::bf16_bits_of(c.p3));
    CudaArray<uint16_t> dy_(test::bf16_bits_of(dy)), y_(out);
    CudaArray<float> rois(c.rois), g2(c.p2.size()), g3(c.p3.size());
    y_.poison(), g2.poison(), g3.poison();
    const cuda::bf16* dev_levels[2] = {test::as_bf16(p2.get()), test::as_bf16(p3.get())};
    float* dev_grads[2] = {g2.get(), g3.get()};
    cuda::roi_align_forward(dev_levels, rois.get(), test::as_bf16(y_.get()), c.g, stream.get());
    cuda::roi_align_backward(test::as_bf16(dy_.get()), rois.get(), dev_grads, c.g, stream.get());
    stream.sync();
    expect_close(test::widen(y_.download()), y, kBf16Atol, kBf16Rtol, "roi_align bf16 y");
    expect_close(g2.download(), d2, 1e-5, kFp32Rtol, "roi_align bf16 dP2 (fp32 accumulation)");
    expect_close(g3.download(), d3, 1e-5, kFp32Rtol, "roi_align bf16 dP3 (fp32 accumulation)");
  }
}

TEST(CudaDetection, LossesWithClassColumnsAndLossScale) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  cpu::ClassSelection s;
  s.groups = 300, s.rows = 13, s.classes = 9, s.inner = 2;
  const std::vector<float> x = test::random_normal(size_t(s.input_elements()), 20, 2.0f);
  const std::vector<float> t = test::random_uniform(size_t(s.elements()), 21, 0.0f, 1.0f);
  std::vector<float> w = test::random_uniform(size_t(s.elements()), 22, 0.0f, 1e-3f);
  for (size_t i = 0; i < w.size(); i += 3) w[i] = 0;
  const std::vector<int32_t> columns = test::random_ids(size_t(s.groups), 23, 0, 8);
  const float beta = 1.0f / 9;
  const float bce = cpu::bce_with_logits_forward(x.data(), t.data(), w.data(), columns.data(), s);
  const float l1 = cpu::smooth_l1_forward(x.data(), t.data(), w.data(), columns.data(), s, beta);
  std::vector<float> dbce(x.size()), dl1(x.size());
  cpu::bce_with_logits_backward(x.data(), t.data(), w.data(), columns.data(), dbce.data(), s, 0.5f * 8);
  cpu::smooth_l1_backward(x.data(), t.data(), w.data(), columns.data(), dl1.data(), s, beta, 0.5f * 8);
  TestStream stream;
  CudaArray<float> x_(x), t_(t), w_(w), loss(2), g1(x.size()), g2(x.size()), scale(std::vector<float>{8.0f});
  CudaArray<int32_t> c_(columns);
  loss.poison(), g1.poison(), g2.poison();
  cuda::bce_with_logits_forward(x_.get(), t_.get(), w_.get(), c_.get(), loss.get(), s, stream.get());
  cuda::smooth_l1_forward(x_.get(), t_.get(), w_.get(), c_.get(), loss.get() + 1, s, beta, stream.get());
  cuda::bce_with_logits_backward(x_.get(), t_.get(), w_.get(), c_.get(), g1.get(), s, 0.5f, stream.get(), scale.get());
  cuda::smooth_l1_backward(x_.get(), t_.get(), w_.get(), c_.get(), g2.get(), s, beta, 0.5f, stream.get(), scale.get());
  stream.sync();
  expect_close(loss.download(), {bce, l1}, 0.0, 1e-5, "losses");
  expect_close(g1.download(), dbce, 1e-9, kFp32Rtol, "bce dx");
  expect_close(g2.download(), dl1, 1e-9, kFp32Rtol, "smooth_l1 dx");
  EXPECT_GT(bce, 0.0f);
}

TEST(CudaDetection, AnchorsTopKAndNms) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  std::vector<cpu::AnchorLevel> levels(3);
  levels[0] = {24, 20, 4, 4, 32}, levels[1] = {12, 10, 8, 8, 64}, levels[2] = {6, 5, 16, 16, 128};
  const int64_t anchors = 3 * (480 + 120 + 30);
  std::vector<float> want(size_t(anchors * 4));
  cpu::anchor_grid(levels.data(), 3, want.data());
  TestStream stream;
  CudaArray<float> got(want.size());
  got.poison();
  cuda::anchor_grid(levels.data(), 3, got.get(), stream.get());
  stream.sync();
  EXPECT_EQ(got.download(), want);

  cpu::ProposalGeometry g;
  g.batch = 3, g.anchors = anchors, g.levels = 3, g.level_anchors[0] = 1440, g.level_anchors[1] = 360;
  g.level_anchors[2] = 90, g.pre_nms_top_n = 200;
  std::vector<float> logits = test::random_normal(size_t(3 * anchors), 30);
  for (size_t i = 0; i < logits.size(); i += 7) logits[i] = 0.25f;  // ties: anchor order decides
  std::vector<int32_t> top(size_t(3 * g.candidates()));
  cpu::top_k_per_level(logits.data(), g, top.data());
  CudaArray<float> l(logits);
  CudaArray<int32_t> t(top.size());
  t.poison();
  cuda::top_k_per_level(l.get(), g, t.get(), stream.get());
  stream.sync();
  EXPECT_EQ(t.download(), top);

  // 300 boxes clustered so that about half overlap above 0.5, sorted by a random score.
  std::vector<float> boxes;
  const std::vector<float> u = test::random_uniform(300 * 4, 31, 0.0f, 1.0f);
  for (int i = 0; i < 300; ++i) {
    const float x = 50 * u[size_t(i * 4)], y = 50 * u[size_t(i * 4 + 1)];
    boxes.insert(boxes.end(), {x, y, x + 10 + 20 * u[size_t(i * 4 + 2)], y + 10 + 20 * u[size_t(i * 4 + 3)]});
  }
  const int64_t words = cpu::nms_mask_words(300);
  std::vector<uint64_t> mask(size_t(300 * words));
  std::vector<uint8_t> valid(300, 1), keep(300);
  valid[17] = 0;
  cpu::nms_bitmask(boxes.data(), 300, 0.5f, mask.data());
  cpu::nms_reduce(mask.data(), valid.data(), 300, keep.data());
  CudaArray<float> b(boxes);
  CudaArray<uint64_t> m(mask.size());
  CudaArray<uint8_t> v(valid), k(300);
  m.poison(), k.poison();
  cuda::nms_bitmask(b.get(), 300, 0.5f, m.get(), stream.get());
  cuda::nms_reduce(m.get(), v.get(), 300, k.get(), stream.get());
  stream.sync();
  EXPECT_EQ(m.download(), mask);
  EXPECT_EQ(k.download(), keep);
  const auto kept = std::count(keep.begin(), keep.end(), uint8_t{1});
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 290);
}

// The whole proposal stage on three levels, batch 3: exact with undecoded anchors (the same floats), and with
// decoded boxes the same anchors chosen and boxes within kBoxAtol (expf on each side).
TEST(CudaDetection, ProposalStage) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  std::vector<cpu::AnchorLevel> levels(3);
  levels[0] = {24, 20, 4, 4, 16}, levels[1] = {12, 10, 8, 8, 32}, levels[2] = {6, 5, 16, 16, 64};
  const int64_t anchors = 3 * (480 + 120 + 30);
  std::vector<float> anchor_boxes(size_t(anchors * 4));
  cpu::anchor_grid(levels.data(), 3, anchor_boxes.data());
  cpu::ProposalGeometry g;
  g.batch = 3, g.anchors = anchors, g.levels = 3, g.level_anchors[0] = 1440, g.level_anchors[1] = 360;
  g.level_anchors[2] = 90, g.pre_nms_top_n = 300, g.post_nms_top_n = 500, g.image_height = 96, g.image_width = 80;
  const std::vector<float> logits = test::random_normal(size_t(3 * anchors), 40);
  const std::vector<float> deltas = test::random_normal(size_t(3 * anchors * 4), 41, 0.3f);
  TestStream stream;
  CudaArray<float> l(logits), d(deltas), a(anchor_boxes), p(size_t(3 * 500 * 4));
  CudaArray<int32_t> src(size_t(3 * 500));
  for (bool decode : {false, true}) {
    g.decode = decode;
    std::vector<float> want(p.size());
    std::vector<int32_t> want_source(src.size());
    cpu::rpn_proposals(logits.data(), deltas.data(), anchor_boxes.data(), g, want.data(), want_source.data());
    p.poison(), src.poison();
    cuda::rpn_proposals(l.get(), d.get(), a.get(), g, p.get(), src.get(), stream.get());
    stream.sync();
    const std::vector<int32_t> got_source = src.download();
    const std::vector<float> got = p.download();
    if (!decode) {
      EXPECT_EQ(got_source, want_source);
      EXPECT_EQ(got, want);
      continue;
    }
    size_t same = 0;
    for (size_t i = 0; i < got_source.size(); ++i) {
      if (got_source[i] != want_source[i]) continue;
      ++same;
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(got[i * 4 + k], want[i * 4 + k], kBoxAtol) << i;
    }
    EXPECT_GE(same, got_source.size() * 99 / 100) << "an ulp of expf may flip an NMS decision, rarely";
  }
}

TEST(CudaDetection, TargetAssignmentAndMaskTargets) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  // Anchors of a 96 x 80 image, 2 images of 5 boxes; proposals = jittered anchors.
  std::vector<cpu::AnchorLevel> levels(2);
  levels[0] = {24, 20, 4, 4, 16}, levels[1] = {12, 10, 8, 8, 32};
  const int64_t anchors = 3 * (480 + 120);
  std::vector<float> anchor_boxes(size_t(anchors * 4));
  cpu::anchor_grid(levels.data(), 2, anchor_boxes.data());
  std::vector<float> boxes;
  const std::vector<float> u = test::random_uniform(2 * 5 * 4, 50, 0.0f, 1.0f);
  for (int i = 0; i < 10; ++i) {
    const float w = 10 + 40 * u[size_t(i * 4)], h = 10 + 40 * u[size_t(i * 4 + 1)];
    const float x = (80 - w) * u[size_t(i * 4 + 2)], y = (96 - h) * u[size_t(i * 4 + 3)];
    boxes.insert(boxes.end(), {x, y, x + w, y + h});
  }
  const std::vector<int32_t> classes = test::random_ids(10, 51, 1, 80), ids = {123, 124};
  cpu::RpnTargetGeometry rg;
  rg.batch = 2, rg.anchors = anchors, rg.boxes = 5;
  const size_t n = size_t(2 * anchors);
  std::vector<float> labels(n), lw(n), bt(n * 4), bw(n * 4);
  cpu::rpn_targets(anchor_boxes.data(), boxes.data(), ids.data(), 7, rg, labels.data(), lw.data(), bt.data(), bw.data());
  TestStream stream;
  CudaArray<float> a(anchor_boxes), b(boxes), l_(n), lw_(n), bt_(n * 4), bw_(n * 4);
  CudaArray<int32_t> c(classes), id(ids);
  l_.poison(), lw_.poison(), bt_.poison(), bw_.poison();
  cuda::rpn_targets(a.get(), b.get(), id.get(), cuda::eager_value(7), rg, l_.get(), lw_.get(), bt_.get(), bw_.get(),
                    stream.get());
  stream.sync();
  EXPECT_EQ(l_.download(), labels);
  EXPECT_EQ(lw_.download(), lw);
  EXPECT_EQ(bw_.download(), bw);
  expect_close(bt_.download(), bt, 1e-5, 1e-5, "rpn box targets");
  EXPECT_GT(std::count(labels.begin(), labels.end(), 1.0f), 5);

  cpu::RoiSampleGeometry sg;
  sg.batch = 2, sg.proposals = 700, sg.boxes = 5, sg.rois_per_image = 128, sg.mask_rois_per_image = 16;
  std::vector<float> proposals(anchor_boxes.begin(), anchor_boxes.begin() + 700 * 4);
  proposals.insert(proposals.end(), anchor_boxes.begin() + 100 * 4, anchor_boxes.begin() + 800 * 4);
  const size_t r = 256, m = 32;
  std::vector<float> rois(r * 5), targets(r * 4), weights(r * 4), mask_rois(m * 5), mask_weights(m);
  std::vector<int32_t> rl(r), sampled(r), ml(m), mb(m);
  cpu::roi_sample(proposals.data(), boxes.data(), classes.data(), ids.data(), 7, sg,
                  {rois.data(), rl.data(), targets.data(), weights.data(), sampled.data(), mask_rois.data(), ml.data(),
                   mb.data(), mask_weights.data()});
  CudaArray<float> pr(proposals), ro(r * 5), ta(r * 4), we(r * 4), mr(m * 5), mw(m);
  CudaArray<int32_t> rl_(r), sa(r), ml_(m), mb_(m);
  for (auto* array : {&ro, &ta, &we, &mr, &mw}) array->poison();
  for (auto* array : {&rl_, &sa, &ml_, &mb_}) array->poison();
  cuda::roi_sample(pr.get(), b.get(), c.get(), id.get(), cuda::eager_value(7), sg,
                   {ro.get(), rl_.get(), ta.get(), we.get(), sa.get(), mr.get(), ml_.get(), mb_.get(), mw.get()},
                   stream.get());
  stream.sync();
  EXPECT_EQ(sa.download(), sampled);
  EXPECT_EQ(rl_.download(), rl);
  EXPECT_EQ(ro.download(), rois);
  EXPECT_EQ(we.download(), weights);
  expect_close(ta.download(), targets, 1e-5, 1e-5, "roi box targets");
  EXPECT_EQ(mr.download(), mask_rois);
  EXPECT_EQ(ml_.download(), ml);
  EXPECT_EQ(mb_.download(), mb);
  EXPECT_EQ(mw.download(), mask_weights);

  std::vector<float> mt(m * 28 * 28), mtw(m * 28 * 28);
  cpu::mask_targets(mask_rois.data(), mb.data(), mask_weights.data(), boxes.data(), int64_t(m), 5, 28, mt.data(), mtw.data());
  CudaArray<float> mt_(mt.size()), mtw_(mt.size());
  mt_.poison(), mtw_.poison();
  cuda::mask_targets(mr.get(), mb_.get(), mw.get(), b.get(), int64_t(m), 5, 28, mt_.get(), mtw_.get(), stream.get());
  stream.sync();
  EXPECT_EQ(mt_.download(), mt);
  EXPECT_EQ(mtw_.download(), mtw);
  EXPECT_GT(std::count(mt.begin(), mt.end(), 1.0f), 100);
}

// The mask predictor as maskrcnn builds it, at full width on 4 RoIs: ConvTranspose2d(256, 256, 2, stride 2) with
// bias (conv_transpose2d: the backward-data pass of a 2 x 2 stride-2 conv), ReLU, the 1 x 1 conv to 81 mask logits;
// loss, input gradient and every weight gradient against the CPU in fp32 and bf16. The tiny workload below has
// 8 channels only.
TEST(CudaMaskRcnn, MaskPredictorTransposedConvMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  auto mask_predictor = [](GraphBuilder& b) {
    const TensorId x = b.parameter("mask_features", {4, 14, 14, 256});
    TensorId m = b.relu(b.conv_transpose2d(x, b.parameter("conv5_mask.weight", {256, 2, 2, 256}),
                                           b.parameter("conv5_mask.bias", {256}), Conv2dOptions::with(2, 0), 0));
    m = b.conv2d(m, b.parameter("mask_fcn_logits.weight", {81, 1, 1, 256}), b.parameter("mask_fcn_logits.bias", {81}),
                 Conv2dOptions::with(1, 0));
    return b.mse_loss(m, 0.0);
  };
  test::expect_gpu_matches_cpu(mask_predictor, DType::kFloat32, kGraphFp32Tolerance);
  test::expect_gpu_matches_cpu(mask_predictor, DType::kBFloat16, 4e-2);  // pix2pixhd's graph bf16 tolerance
}

// The tiny workload on both devices from the same weights and inputs: the loss and every gradient (fp32); a bf16
// graph trains a step with finite values (its RPN scores differ from fp32's, so it chooses other proposals).
TEST(CudaMaskRcnn, TinyWorkloadMatchesTheCpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device visible";
  const Workload& workload = find_workload("maskrcnn");
  for (DType compute : {DType::kFloat32, DType::kBFloat16}) {
    Graph cpu_graph, gpu_graph;
    GraphBuilder cb(cpu_graph), gb(gpu_graph, compute);
    const TensorId cpu_loss = workload.build(cb, 3, WorkloadScale::kTiny).loss;
    const TensorId gpu_loss = workload.build(gb, 3, WorkloadScale::kTiny).loss;
    const auto cpu_gradients = append_backward(cpu_graph, cpu_loss);
    const auto gpu_gradients = append_backward(gpu_graph, gpu_loss);
    MemoryPlan cpu_plan = plan_memory(cpu_graph), gpu_plan = plan_memory(gpu_graph);
    CpuExecutor cpu(cpu_graph, cpu_plan);
    std::unique_ptr<Executor> gpu = make_cuda_executor(gpu_graph, gpu_plan);
    workload.synthesize(cpu_graph, 5, [&](TensorId id, const void* data, size_t bytes) { cpu.write_tensor(id, data, bytes); });
    workload.synthesize(gpu_graph, 5, [&](TensorId id, const void* data, size_t bytes) { gpu->write_tensor(id, data, bytes); });
    uint32_t seed = 70;
    for (TensorId id : cpu_graph.tensors_with_role(TensorRole::kParameter)) {
      const TensorInfo& info = cpu_graph.tensor(id);
      const std::vector<float> values = test::random_normal(size_t(info.elements()), seed++, 0.1f);
      cpu.write_tensor(id, values.data(), info.bytes());
      gpu->write_tensor(gpu_graph.find_tensor(info.name), values.data(), info.bytes());
    }
    cpu.run();
    gpu->run();
    float want = 0, got = 0;
    cpu.read_tensor(cpu_loss, &want, 4);
    gpu->read_tensor(gpu_loss, &got, 4);
    ASSERT_TRUE(std::isfinite(got)) << dtype_name(compute);
    if (compute != DType::kFloat32) continue;
    EXPECT_NEAR(got, want, kGraphFp32Tolerance * std::fabs(want));
    for (const auto& [parameter, gradient] : cpu_gradients) {
      const TensorInfo& info = cpu_graph.tensor(parameter);
      std::vector<float> w(size_t(info.elements())), g(w.size());
      cpu.read_tensor(gradient, w.data(), info.bytes());
      gpu->read_tensor(gpu_gradients.at(gpu_graph.find_tensor(info.name)), g.data(), info.bytes());
      double diff = 0, norm = 0;
      for (size_t i = 0; i < w.size(); ++i) diff += (double(g[i]) - w[i]) * (double(g[i]) - w[i]), norm += double(w[i]) * w[i];
      EXPECT_LE(std::sqrt(diff / std::max(norm, 1e-30)), kGraphFp32Tolerance) << info.name;
    }
  }
}

}  // namespace
}  // namespace sb
