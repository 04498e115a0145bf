// The typed params of the op families moved into src/core/ops (issue 24): each family's decoder reads back from
// the node its GraphBuilder method built the sizes that went in, and encoding those params gives the node's
// attributes exactly (the builders encode through them, and the CPU/CUDA bindings will decode through them).
// Run: unit_tests --gtest_filter='OpParams*'.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scalebench/graph_builder.h"
#include "src/core/ops/detection_losses.h"
#include "src/core/ops/detection_targets.h"
#include "src/core/ops/frozen_affine.h"
#include "src/core/ops/fused_conv_weight.h"
#include "src/core/ops/image_params.h"
#include "src/core/ops/minibatch_stddev.h"
#include "src/core/ops/noise_injection.h"
#include "src/core/ops/reflection_pad.h"
#include "src/core/ops/roi_align.h"
#include "src/core/ops/san.h"
#include "src/core/ops/style_mix.h"
#include "src/core/ops/style_modulation.h"

namespace sb {
namespace {

const Node& only_node(const Graph& graph, const std::string& op) {
  const Node* found = nullptr;
  for (const Node& node : graph.nodes()) {
    if (node.op == op) {
      EXPECT_EQ(found, nullptr) << "two " << op << " nodes";
      found = &node;
    }
  }
  if (found == nullptr) throw std::runtime_error("no " + op + " node");
  return *found;
}

TEST(OpParams, GanAndStyleGanFamiliesRoundTrip) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {4, 6, 5, 3});
  b.reflection_pad2d(x, 1, 2, 3, 0);
  b.blur2d(x);
  b.minibatch_stddev(x, 3);  // the largest group dividing the batch of 4: 2
  b.fused_conv_weight(b.parameter("w3", {7, 3, 3, 3}), true);
  b.noise_injection(x, b.parameter("noise_weight", {3}), b.input("ids", {4}, DType::kInt32));
  b.style_modulation(x, b.input("style", {4, 6}));
  b.style_mix(b.input("w", {8, 9}), b.input("crossover", {4}, DType::kInt32), 5);

  const Node& pad = only_node(graph, "reflection_pad2d");
  const ReflectionPadParams p = reflection_pad_params(pad);
  EXPECT_EQ(std::vector<int64_t>({p.batch, p.in_h, p.in_w, p.channels, p.top, p.bottom, p.left, p.right}),
            std::vector<int64_t>({4, 6, 5, 3, 1, 2, 3, 0}));
  EXPECT_EQ(encode(p), pad.attributes);

  const Node& blur = only_node(graph, "blur2d");
  const ImageParams image = image_params(blur);
  EXPECT_EQ(std::vector<int64_t>({image.batch, image.height, image.width, image.channels}),
            std::vector<int64_t>({4, 6, 5, 3}));
  EXPECT_EQ(encode(image), blur.attributes);

  const Node& stddev = only_node(graph, "minibatch_stddev");
  const MinibatchStddevGeometry g = minibatch_stddev_geometry(stddev);
  EXPECT_EQ(g.group, 2);
  EXPECT_EQ(g.splits, 1);
  EXPECT_EQ(g.channels, 3);
  EXPECT_EQ(encode(g), stddev.attributes);

  const Node& fused = only_node(graph, "fused_conv_weight");
  const FusedConvWeightParams f = fused_conv_weight_params(fused);
  EXPECT_EQ(f.out_channels, 7);
  EXPECT_EQ(f.in_channels, 3);
  EXPECT_EQ(f.factor, 0.25);
  EXPECT_EQ(encode(f), fused.attributes);

  const Node& noise = only_node(graph, "noise_injection");
  const NoiseInjectionParams n = noise_injection_params(noise);
  EXPECT_EQ(std::vector<int64_t>({n.batch, n.pixels, n.channels, n.n, n.block_offset}),
            std::vector<int64_t>({4, 30, 3, 4 * noise_blocks(30), 0}));
  EXPECT_EQ(encode(n), noise.attributes);

  const Node& modulation = only_node(graph, "style_modulation");
  const StyleModulationParams m = style_modulation_params(modulation);
  EXPECT_EQ(std::vector<int64_t>({m.batch, m.pixels, m.channels}), std::vector<int64_t>({4, 30, 3}));
  EXPECT_EQ(encode(m), modulation.attributes);

  const Node& mix = only_node(graph, "style_mix");
  const StyleMixParams s = style_mix_params(mix);
  EXPECT_EQ(std::vector<int64_t>({s.layers, s.batch, s.dim}), std::vector<int64_t>({5, 4, 9}));
  EXPECT_EQ(encode(s), mix.attributes);
}

TEST(OpParams, DetectionFamiliesRoundTrip) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 8, 8, 4});
  b.frozen_affine(x, b.input("scale", {4}), b.input("shift", {4}), true);
  // Two levels at strides 4 and 8 of a 32-pixel image.
  b.roi_align({x, b.input("p3", {2, 4, 4, 4})}, b.input("rois", {6, 5}), 7, 32, 2, false);
  const TensorId bce = b.input("logits", {3, 5, 2});
  b.bce_with_logits_loss(bce, b.input("targets", {30}), b.input("weights", {30}));
  const RoiSamples samples =
      b.roi_sample(b.input("proposals", {2, 10, 4}), b.input("gt", {2, 3, 4}), b.input("classes", {2, 3}, DType::kInt32),
                   b.input("ids", {2}, DType::kInt32), RoiSampleOptions{8, 4, 0.25, 0.5});
  b.mask_targets(samples, b.input("gt_masks", {2, 3, 4}), 14);

  const Node& affine = only_node(graph, "frozen_affine");
  const FrozenAffineParams a = frozen_affine_params(affine);
  EXPECT_EQ(a.rows, 2 * 8 * 8);
  EXPECT_EQ(a.channels, 4);
  EXPECT_TRUE(a.relu);
  EXPECT_EQ(encode(a), affine.attributes);

  const Node& roi = only_node(graph, "roi_align");
  const RoiAlignGeometry r = detail::roi_align_geometry(roi.attributes);
  EXPECT_EQ(r.levels, 2);
  EXPECT_EQ(r.first_level, 2);
  EXPECT_EQ(r.height[1], 4);
  EXPECT_EQ(r.rois, 6);
  EXPECT_EQ(r.output_size, 7);
  EXPECT_EQ(encode(r), roi.attributes);

  const Node& loss = only_node(graph, "bce_with_logits_loss");
  const ClassSelection c = detail::class_selection(loss.attributes);
  EXPECT_EQ(c.groups, 30);
  EXPECT_EQ(c.input_elements(), 30);
  EXPECT_EQ(encode(c), loss.attributes);

  const Node& masks = only_node(graph, "mask_targets");
  const MaskTargetParams t = mask_target_params(masks);
  EXPECT_EQ(std::vector<int64_t>({t.rois, t.boxes, t.resolution}), std::vector<int64_t>({2 * 4, 3, 14}));
  EXPECT_EQ(encode(t), masks.attributes);
}

TEST(OpParams, SanFamilyRoundTripsWithItsMatmulFlops) {
  Graph graph;
  GraphBuilder b(graph);
  b.gru_cell(b.input("x", {2, 3}), b.input("h", {2, 4}), b.parameter("w_ih", {12, 3}), b.parameter("w_hh", {12, 4}),
             b.parameter("b_ih", {12}), b.parameter("b_hh", {12}));
  const TensorId memory = b.input("memory", {2, 5, 4});
  const TensorId mask = b.input("mask", {2, 5}, DType::kUInt8);
  b.san_self_attention(memory, mask, b.parameter("self_w", {1, 4}), b.parameter("self_b", {1}));
  b.san_bilinear_attention(memory, memory, b.input("state", {2, 6}), mask, b.parameter("bi_w", {4, 6}),
                           b.parameter("bi_b", {4}));
  const TensorId turns = b.san_turn_mask(2, 3, 0.25);
  b.san_turn_average(b.input("turn_logits", {3, 2, 7}), turns);

  const Node& gru = only_node(graph, "gru_cell");
  const GruCellParams g = gru_cell_params(gru);
  EXPECT_EQ(std::vector<int64_t>({g.batch, g.input_size, g.hidden_size}), std::vector<int64_t>({2, 3, 4}));
  EXPECT_EQ(encode(g), gru.attributes);
  EXPECT_EQ(gru.attributes.at("matmul_flops"), 2.0 * 2 * 3 * 4 * (3 + 4));

  const Node& self = only_node(graph, "san_self_attention");
  EXPECT_EQ(encode(san_self_attention_params(self)), self.attributes);
  const Node& bilinear = only_node(graph, "san_bilinear_attention");
  const SanBilinearAttentionParams bp = san_bilinear_attention_params(bilinear);
  EXPECT_EQ(std::vector<int64_t>({bp.batch, bp.length, bp.memory_hidden, bp.state_hidden}),
            std::vector<int64_t>({2, 5, 4, 6}));
  EXPECT_EQ(encode(bp), bilinear.attributes);
  const Node& mask_node = only_node(graph, "san_turn_mask");
  const SanTurnMaskParams tm = san_turn_mask_params(mask_node);
  EXPECT_EQ(tm.n, 2 * (3 + 1));
  EXPECT_EQ(tm.drop_p, 0.25);
  EXPECT_EQ(encode(tm), mask_node.attributes);
  const Node& average = only_node(graph, "san_turn_average");
  const SanTurnAverageParams ta = san_turn_average_params(average);
  EXPECT_EQ(std::vector<int64_t>({ta.turns, ta.batch, ta.classes}), std::vector<int64_t>({3, 2, 7}));
  EXPECT_EQ(encode(ta), average.attributes);
}

}  // namespace
}  // namespace sb
