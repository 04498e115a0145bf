// The index arithmetic of the CUDA depthwise convolution kernels (src/cuda/depthwise_conv2d_tiles.h) on the CPU:
// the kernels' per-thread functions driven by a host emulation of their launch (channel slices, block shapes,
// grid-stride runs, the backward filter's per-block partials and finalize), against the reference convolution
// (src/cpu/conv2d.h), exactly: small-integer data make every sum exact in fp32 in any order, so a wrong tap,
// stride, pad, rotation or channel shows as a mismatch. K 3/5/7, stride 1/2, symmetric, asymmetric and TF-"SAME"
// padding, odd sizes, channel counts that leave partial slices, vector widths 1-8. Then the host-side helpers:
// applicability, block shapes, vector widths, the backward filter's block count within the workspace.
// Run: unit_tests --gtest_filter='DepthwiseConv2dTiles*'.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "src/cpu/conv2d.h"
#include "src/cuda/depthwise_conv2d_tiles.h"
#include "tests/support/conv_geometry.h"
#include "tests/support/tensor_compare.h"

namespace sb {
namespace {

using namespace cuda::detail;
using test::geometry;

// Integers in [-3, 3]: products and their sums (at most a few thousand terms here) are exact in fp32.
std::vector<float> small_integers(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> distribution(-3, 3);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(distribution(generator));
  return values;
}

void expect_exact(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_GT(test::l2_norm(want), 0.0) << what;
  EXPECT_EQ(test::count_unwritten(got), 0u) << what;
  const auto cmp = test::compare_close(got, std::vector<double>(want.begin(), want.end()), 0.0, 0.0);
  EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.description;
}

// A block's staged weights as stage_weights in depthwise_conv2d.cu writes them: [tap][slice channel].
template <int K>
std::vector<float> staged_slice(const std::vector<float>& w, int64_t channels, int slice_channels, int64_t slice,
                                bool rotate) {
  std::vector<float> staged(size_t(K * K * slice_channels));
  for (int i = 0; i < K * K * slice_channels; ++i) {
    const int64_t c = slice * slice_channels + i % slice_channels;
    staged[size_t(i)] = staged_weight(w.data(), channels, K * K, c, i / slice_channels, rotate);
  }
  return staged;
}

// forward_kernel's launch: every slice, every channel pack of it, every run (the grid-stride order does not
// change what a run computes).
template <int V, int K, int S>
std::vector<float> emulate_forward(const std::vector<float>& in, const std::vector<float>& w,
                                   const DepthwiseWindow& win, bool rotate) {
  std::vector<float> out = test::poisoned(size_t(win.batch * win.out_h * win.out_w * win.channels));
  const DepthwiseBlockShape shape = depthwise_block_shape(win.channels, V, staging_max_tx(K, V));
  const int slice_channels = shape.tx * V;
  for (int64_t slice = 0; slice < shape.slices; ++slice) {
    const std::vector<float> staged = staged_slice<K>(w, win.channels, slice_channels, slice, rotate);
    for (int tx = 0; tx < shape.tx; ++tx) {
      const int64_t c0 = slice * slice_channels + tx * V;
      if (c0 >= win.channels) continue;
      for (int64_t run = 0; run < output_runs<kDepthwiseRun>(win); ++run) {
        depthwise_forward_run<float, V, K, S, kDepthwiseRun>(in.data(), staged.data() + tx * V, slice_channels,
                                                             out.data(), win, run, c0);
      }
    }
  }
  return out;
}

// backward_data_kernel's launch: one pixel of dx per thread and channel pack.
template <int V, int K, int S>
std::vector<float> emulate_gather(const std::vector<float>& dy, const std::vector<float>& w,
                                  const DepthwiseWindow& win) {
  std::vector<float> dx = test::poisoned(size_t(win.batch * win.in_h * win.in_w * win.channels));
  const DepthwiseBlockShape shape = depthwise_block_shape(win.channels, V, staging_max_tx(K, V));
  const int slice_channels = shape.tx * V;
  for (int64_t slice = 0; slice < shape.slices; ++slice) {
    const std::vector<float> staged = staged_slice<K>(w, win.channels, slice_channels, slice, false);
    for (int tx = 0; tx < shape.tx; ++tx) {
      const int64_t c0 = slice * slice_channels + tx * V;
      if (c0 >= win.channels) continue;
      for (int64_t pixel = 0; pixel < win.batch * win.in_h * win.in_w; ++pixel) {
        depthwise_backward_data_pixel<float, V, K, S>(dy.data(), staged.data() + tx * V, slice_channels, dx.data(),
                                                      win, pixel, c0);
      }
    }
  }
  return dx;
}

// filter_partial_kernel + filter_finalize_kernel with `blocks` blocks per slice: thread (tx, ty) of block b sums
// runs b·ty + y + k·blocks·ty, the lanes are added in order, the partials land at filter_partial_index, and the
// finalize adds the blocks in order.
template <int V, int K, int S>
std::vector<float> emulate_filter(const std::vector<float>& x, const std::vector<float>& dy, const Conv2dGeometry& g,
                                  int64_t blocks) {
  const DepthwiseWindow win = forward_window(g);
  const DepthwiseBlockShape shape = depthwise_block_shape(win.channels, V, 32);
  const int slice_channels = shape.tx * V;
  const int64_t taps = K * K, runs = output_runs<kDepthwiseRun>(win);
  std::vector<float> partials = test::poisoned(depthwise_filter_workspace_bytes(g, blocks) / sizeof(float));
  for (int64_t slice = 0; slice < shape.slices; ++slice) {
    for (int64_t b = 0; b < blocks; ++b) {
      for (int tx = 0; tx < shape.tx; ++tx) {
        const int64_t c0 = slice * slice_channels + tx * V;
        if (c0 >= win.channels) continue;
        float lane_sum[K * K][V] = {};
        for (int ty = 0; ty < shape.ty; ++ty) {
          float acc[K * K][V] = {};
          for (int64_t run = b * shape.ty + ty; run < runs; run += blocks * shape.ty) {
            depthwise_filter_run<float, V, K, S, kDepthwiseRun>(x.data(), dy.data(), win, run, c0, acc);
          }
          for (int t = 0; t < K * K; ++t) {
            for (int v = 0; v < V; ++v) lane_sum[t][v] += acc[t][v];
          }
        }
        for (int t = 0; t < K * K; ++t) {
          for (int v = 0; v < V; ++v) {
            partials[size_t(filter_partial_index(b, t, c0 + v, taps, win.channels))] = lane_sum[t][v];
          }
        }
      }
    }
  }
  std::vector<float> dw = test::poisoned(size_t(g.w_elements()));
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t c = 0; c < win.channels; ++c) {
      double sum = 0;
      for (int64_t b = 0; b < blocks; ++b) sum += partials[size_t(filter_partial_index(b, t, c, taps, win.channels))];
      dw[size_t(c * taps + t)] = static_cast<float>(sum);
    }
  }
  return dw;
}

// All three passes of one geometry with vector width V, against the reference; the backward data both ways
// (the rotated forward is what stride 1 runs, the gather what stride 2 runs; both must hold for any stride the
// formulas claim). The backward filter with the block count the runner would take on a 4-SM device, and with a
// single block.
template <int V, int K, int S>
void check_geometry(const Conv2dGeometry& g) {
  ASSERT_TRUE(depthwise_kernels_apply(g));
  ASSERT_EQ(g.in_c % V, 0);
  const auto x = small_integers(size_t(g.x_elements()), 1);
  const auto w = small_integers(size_t(g.w_elements()), 2);
  const auto dy = small_integers(size_t(g.y_elements()), 3);
  std::vector<float> y_ref(dy.size()), dx_ref(x.size()), dw_ref(w.size());
  cpu::conv2d_forward(x.data(), w.data(), y_ref.data(), g);
  cpu::conv2d_backward_data(dy.data(), w.data(), dx_ref.data(), g);
  cpu::conv2d_backward_filter(x.data(), dy.data(), dw_ref.data(), g);

  expect_exact(emulate_forward<V, K, S>(x, w, forward_window(g), false), y_ref, "y");
  expect_exact(emulate_gather<V, K, S>(dy, w, forward_window(g)), dx_ref, "dx (gather)");
  if (S == 1) expect_exact(emulate_forward<V, K, 1>(dy, w, flipped_window(g), true), dx_ref, "dx (rotated forward)");
  const int64_t blocks = depthwise_filter_blocks(g, sizeof(float), 1 << 20, 4);
  ASSERT_GE(blocks, 1);
  expect_exact(emulate_filter<V, K, S>(x, dy, g, blocks), dw_ref, "dw, " + std::to_string(blocks) + " blocks");
  expect_exact(emulate_filter<V, K, S>(x, dy, g, 1), dw_ref, "dw, 1 block");
}

// geometry(n, h, w, c, k, r, s, stride, dilation, top, bottom, left, right, groups)
TEST(DepthwiseConv2dTiles, ThreeByThreeStrideOneSame) {
  check_geometry<4, 3, 1>(geometry(2, 9, 11, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8));
}

TEST(DepthwiseConv2dTiles, FiveByFiveStrideTwoOddInput) {
  check_geometry<2, 5, 2>(geometry(2, 13, 11, 6, 6, 5, 5, 2, 1, 2, 2, 2, 2, 6));
}

TEST(DepthwiseConv2dTiles, SevenBySevenStrideOneWithOutputRowsShorterThanARun) {
  check_geometry<1, 7, 1>(geometry(1, 7, 3, 5, 5, 7, 7, 1, 1, 3, 3, 3, 3, 5));
}

TEST(DepthwiseConv2dTiles, StrideTwoTfSamePaddingOnAnEvenInput) {
  // TF "SAME", k 5 s 2 on 12 x 10: (1, 2) rows, (1, 2) columns; asymmetric.
  check_geometry<8, 5, 2>(geometry(1, 12, 10, 16, 16, 5, 5, 2, 1, 1, 2, 1, 2, 16));
}

TEST(DepthwiseConv2dTiles, ZeroPadTopLeftStrideTwo) {
  // NASNet's ZeroPad2d((1, 0, 1, 0)) before a 3 x 3 stride-2 window.
  check_geometry<2, 3, 2>(geometry(2, 11, 11, 10, 10, 3, 3, 2, 1, 1, 0, 1, 0, 10));
}

TEST(DepthwiseConv2dTiles, SevenBySevenStrideTwoUnpaddedBottomRight) {
  check_geometry<4, 7, 2>(geometry(1, 16, 15, 12, 12, 7, 7, 2, 1, 3, 0, 2, 1, 12));
}

TEST(DepthwiseConv2dTiles, ManyChannelsLeavePartialSlices) {
  // 264 channels, V 2: 132 packs in 5 slices of 27 (the last holds 24), staging and the filter both.
  check_geometry<2, 3, 1>(geometry(1, 5, 6, 264, 264, 3, 3, 1, 1, 1, 1, 1, 1, 264));
  // 7 x 7 with V 8 stages at most 31 packs per slice.
  check_geometry<8, 7, 1>(geometry(1, 6, 5, 264, 264, 7, 7, 1, 1, 3, 3, 3, 3, 264));
}

TEST(DepthwiseConv2dTiles, StrideOneLargePaddingMakesRotatedPadsNegative) {
  // pad 4 > K - 1 = 2: the rotated forward's pad is -2, an offset into dy.
  check_geometry<1, 3, 1>(geometry(1, 4, 5, 3, 3, 3, 3, 1, 1, 4, 4, 4, 4, 3));
}

TEST(DepthwiseConv2dTiles, AppliesOnlyToDepthwiseSquareStrideOneOrTwo) {
  EXPECT_TRUE(depthwise_kernels_apply(geometry(2, 9, 9, 16, 16, 5, 5, 2, 1, 2, 2, 2, 2, 16)));
  EXPECT_TRUE(depthwise_kernels_apply(geometry(2, 9, 9, 42, 42, 7, 7, 1, 1, 3, 3, 3, 3, 42)));
  EXPECT_FALSE(depthwise_kernels_apply(geometry(1, 8, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 8)));   // multiplier 2
  EXPECT_FALSE(depthwise_kernels_apply(geometry(2, 9, 8, 12, 8, 3, 3, 1, 2, 2, 2, 2, 2, 4)));   // grouped
  EXPECT_FALSE(depthwise_kernels_apply(geometry(2, 17, 17, 16, 16, 3, 3, 1, 2, 2, 2, 2, 2, 16)));  // dilated
  EXPECT_FALSE(depthwise_kernels_apply(geometry(2, 9, 9, 16, 16, 1, 1, 1, 1, 0, 0, 0, 0, 16)));  // 1 x 1
  EXPECT_FALSE(depthwise_kernels_apply(geometry(2, 9, 9, 16, 16, 3, 3, 3, 1, 1, 1, 1, 1, 16)));  // stride 3
  EXPECT_FALSE(depthwise_kernels_apply(geometry(2, 9, 9, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1)));   // dense
  Conv2dGeometry wide = geometry(2, 9, 9, 16, 16, 3, 5, 1, 1, 1, 1, 2, 2, 16);  // 3 x 5
  EXPECT_FALSE(depthwise_kernels_apply(wide));
}

TEST(DepthwiseConv2dTiles, BlockShapesCoverEveryChannelPackWithoutEmptySlices) {
  for (int64_t channels : {2, 6, 42, 84, 96, 168, 264, 336, 672, 864, 1344, 4032}) {
    for (int v : {1, 2, 4, 8}) {
      if (channels % v != 0) continue;
      for (int max_tx : {32, 31, 12}) {
        const DepthwiseBlockShape s = depthwise_block_shape(channels, v, max_tx);
        const int64_t packs = channels / v;
        SCOPED_TRACE(std::to_string(channels) + " channels, V " + std::to_string(v) + ", max_tx " +
                     std::to_string(max_tx));
        EXPECT_LE(s.tx, max_tx);
        EXPECT_GE(s.tx * s.slices, packs);
        EXPECT_LT(int64_t(s.tx) * (s.slices - 1), packs);  // the last slice holds a channel
        EXPECT_LE(s.tx * s.ty, kDepthwiseThreads);
        EXPECT_GE(s.ty, 1);
      }
    }
  }
  const DepthwiseBlockShape nasnet = depthwise_block_shape(864, 8, 32);
  EXPECT_EQ(nasnet.tx, 27);
  EXPECT_EQ(nasnet.ty, 9);
  EXPECT_EQ(nasnet.slices, 4);
  EXPECT_EQ(staging_max_tx(7, 8), 31);  // 49 taps x 248 channels x 4 bytes = 47.5 KiB
  EXPECT_EQ(staging_max_tx(5, 8), 32);
}

TEST(DepthwiseConv2dTiles, VectorWidthDividesChannelsAndAlignment) {
  EXPECT_EQ(depthwise_vector_width(864, 2, 256, 8), 8);  // bf16: 16 bytes
  EXPECT_EQ(depthwise_vector_width(864, 4, 256, 8), 4);  // fp32: 16 bytes
  EXPECT_EQ(depthwise_vector_width(42, 2, 256, 8), 2);
  EXPECT_EQ(depthwise_vector_width(84, 2, 256, 8), 4);
  EXPECT_EQ(depthwise_vector_width(864, 2, 8, 8), 4);   // an 8-byte-aligned view
  EXPECT_EQ(depthwise_vector_width(864, 2, 2, 8), 1);
  EXPECT_EQ(depthwise_vector_width(864, 2, 256, filter_vector_cap(5)), 2);
  EXPECT_EQ(depthwise_vector_width(864, 4, 256, filter_vector_cap(3)), 4);
  EXPECT_EQ(depthwise_vector_width(7, 4, 256, 8), 1);
}

TEST(DepthwiseConv2dTiles, OutputRunsVisitEveryOutputColumnOnce) {
  const DepthwiseWindow win{2, 0, 0, 1, 3, 9, 0, 0};  // out 2 x 3 x 9: 3 runs per row, the last of 1 column
  std::vector<int> visits(size_t(2 * 3 * 9), 0);
  ASSERT_EQ(output_runs<4>(win), 2 * 3 * 3);
  for (int64_t run = 0; run < output_runs<4>(win); ++run) {
    const OutputRun r = output_run<4>(win, run);
    for (int p = 0; p < 4 && r.ow0 + p < win.out_w; ++p) ++visits[size_t((r.n * 3 + r.oh) * 9 + r.ow0 + p)];
  }
  for (int v : visits) EXPECT_EQ(v, 1);
}

TEST(DepthwiseConv2dTiles, FilterBlocksFitTheWorkspaceAndTheRuns) {
  const Conv2dGeometry g = geometry(64, 42, 42, 864, 864, 5, 5, 1, 1, 2, 2, 2, 2, 864);
  const uint64_t per_block = 25 * 864 * sizeof(float);
  // V 2 (the 5 x 5 cap): 432 packs, 14 slices of 31, ty 8; 132 SMs -> 2 x 132 / 14 = 18 blocks per slice.
  EXPECT_EQ(depthwise_filter_blocks(g, 2, 256ull << 20, 132), 18);
  EXPECT_EQ(depthwise_filter_blocks(g, 2, 5 * per_block + 7, 132), 5);
  EXPECT_EQ(depthwise_filter_blocks(g, 2, per_block - 1, 132), 0);
  EXPECT_EQ(depthwise_filter_workspace_bytes(g, 18), 18 * per_block);
  // A tiny image: no more blocks than its runs need (1 x 2 x 3 outputs: 2 runs, one block of ty >= 2).
  EXPECT_EQ(depthwise_filter_blocks(geometry(1, 2, 3, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16), 4, 1 << 20, 132), 1);
}

}  // namespace
}  // namespace sb
