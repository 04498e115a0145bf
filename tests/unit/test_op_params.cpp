// The core op families' typed params (src/core/ops/<family>.h, issue 24): each builder's node carries exactly
// encode(its params), the decoder reads back the values the builder chose, and the registry holds each moved
// family's rows with the detachment autodiff relied on before the move. Run: unit_tests --gtest_filter='OpParams*'.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include <stdexcept>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/graph_builder.h"
#include "src/core/ops/batchnorm.h"
#include "src/core/ops/concat.h"
#include "src/core/ops/conv2d.h"
#include "src/core/ops/cross_entropy.h"
#include "src/core/ops/decode.h"
#include "src/core/ops/drop_path.h"
#include "src/core/ops/embedding.h"
#include "src/core/ops/gemm.h"
#include "src/core/ops/layout.h"
#include "src/core/ops/op_registry.h"
#include "src/core/ops/select_column.h"
#include "src/core/ops/softmax.h"
#include "src/core/ops/upsample.h"
#include "src/core/ops/yolo_loss.h"
#include "src/cpu/conv2d.h"
#include "src/cpu/pooling.h"

namespace sb {
namespace {

// The last node of `graph` whose op is `op`.
const Node& last_node(const Graph& graph, const std::string& op) {
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    if (it->op == op) return *it;
  }
  throw std::runtime_error("no " + op + " node");
}

TEST(OpParams, GemmOfLinearAndBatchedMatmul) {
  Graph graph;
  GraphBuilder b(graph);
  b.linear(b.input("x", {2, 3, 5}), b.parameter("w", {7, 5}));
  const Node& linear = last_node(graph, "gemm");
  const GemmParams p = gemm_params(linear);
  EXPECT_FALSE(p.transpose_a);
  EXPECT_TRUE(p.transpose_b);
  EXPECT_EQ(p.m, 6);
  EXPECT_EQ(p.n, 7);
  EXPECT_EQ(p.k, 5);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(encode(p), linear.attributes);

  b.matmul(b.input("a", {4, 3, 8, 5}), b.input("b", {4, 3, 6, 5}), false, true, 0.25);
  const Node& matmul = last_node(graph, "gemm");
  const GemmParams q = gemm_params(matmul);
  EXPECT_EQ(q.m, 8);
  EXPECT_EQ(q.n, 6);
  EXPECT_EQ(q.k, 5);
  EXPECT_EQ(q.batch, 12);
  EXPECT_EQ(q.alpha, 0.25);
  EXPECT_EQ(encode(q), matmul.attributes);
}

TEST(OpParams, LayoutSelectColumnEmbeddingSoftmaxCrossEntropy) {
  Graph graph;
  GraphBuilder b(graph);
  b.swap_middle(b.input("x", {2, 3, 4, 5}));
  const Node& swap = last_node(graph, "swap_middle");
  const SwapMiddleParams s = swap_middle_params(swap);
  EXPECT_EQ(std::vector<int64_t>({s.a, s.b, s.c, s.d}), std::vector<int64_t>({2, 3, 4, 5}));
  EXPECT_EQ(encode(s), swap.attributes);

  b.select_column(b.input("logits", {3, 4, 2}), 1);
  const Node& column = last_node(graph, "select_column");
  const SelectColumnParams c = select_column_params(column);
  EXPECT_EQ(std::vector<int64_t>({c.rows, c.cols, c.column}), std::vector<int64_t>({12, 2, 1}));
  EXPECT_EQ(encode(c), column.attributes);

  b.embedding(b.input("ids", {2, 5}, DType::kInt32), b.parameter("table", {11, 4}), 0);
  const Node& embedding = last_node(graph, "embedding");
  const EmbeddingParams e = embedding_params(embedding);
  EXPECT_EQ(std::vector<int64_t>({e.tokens, e.dim, e.vocab, e.padding_idx}), std::vector<int64_t>({10, 4, 11, 0}));
  EXPECT_EQ(encode(e), embedding.attributes);

  b.masked_softmax(b.input("scores", {2, 3, 4, 6}), 0.5, b.input("lengths", {2}, DType::kInt32), true);
  const Node& softmax = last_node(graph, "masked_softmax");
  const MaskedSoftmaxParams m = masked_softmax_params(softmax);
  EXPECT_EQ(std::vector<int64_t>({m.batch, m.heads, m.q, m.k}), std::vector<int64_t>({2, 3, 4, 6}));
  EXPECT_EQ(m.scale, 0.5);
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(encode(m), softmax.attributes);

  b.softmax_cross_entropy(b.input("out", {3, 7}), b.input("targets", {3}, DType::kInt32), 0.1, 2);
  const Node& loss = last_node(graph, "softmax_cross_entropy");
  const CrossEntropyParams x = cross_entropy_params(loss);
  EXPECT_EQ(std::vector<int64_t>({x.rows, x.classes, x.ignore_index}), std::vector<int64_t>({3, 7, 2}));
  EXPECT_EQ(x.label_smoothing, 0.1);
  EXPECT_EQ(encode(x), loss.attributes);
}

TEST(OpParams, ConvPoolingBatchNormUpsampleConcat) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId x = b.input("x", {2, 6, 6, 4});
  b.conv2d(x, b.parameter("w", {8, 3, 3, 2}), kNoTensor, Conv2dOptions::with(2, 1, 1, 2));
  const Node& conv = last_node(graph, "conv2d");
  const Conv2dGeometry g = conv2d_params(conv);
  EXPECT_EQ(std::vector<int64_t>({g.out_h, g.out_w, g.out_c, g.groups}), std::vector<int64_t>({3, 3, 8, 2}));
  NodeAttributes expected = encode(g);
  expected["matmul_flops"] = 2 * g.macs();
  EXPECT_EQ(expected, conv.attributes);

  b.avg_pool2d(x, 3, Conv2dOptions::with(1, 1), false);
  const Node& pool = last_node(graph, "avg_pool2d");
  NodeAttributes pooled = encode(conv2d_params(pool));
  pooled["count_include_pad"] = 0.0;
  EXPECT_EQ(pooled, pool.attributes);

  BatchNormOptions options;
  options.activation = BatchNormOptions::Activation::kLeakyRelu;
  options.slope = 0.2;
  b.batchnorm(x, b.parameter("gamma", {4}), b.parameter("beta", {4}), options);
  const Node& bn = last_node(graph, "batchnorm");
  const BatchNormParams n = batchnorm_params(bn);
  EXPECT_EQ(std::vector<int64_t>({n.rows, n.channels, n.groups}), std::vector<int64_t>({72, 4, 1}));
  EXPECT_EQ(n.activation, 2);
  EXPECT_EQ(n.slope, 0.2);
  EXPECT_EQ(encode(n), bn.attributes);

  b.upsample_nearest(x, 12, 12);
  const Node& nearest = last_node(graph, "upsample_nearest");
  EXPECT_EQ(nearest.attributes.count("align_corners"), 0u);  // as before the move: bilinear only
  EXPECT_EQ(encode(upsample_params(nearest), false), nearest.attributes);
  b.upsample_bilinear(x, 5, 7, true);
  const Node& bilinear = last_node(graph, "upsample_bilinear");
  const UpsampleParams u = upsample_params(bilinear);
  EXPECT_EQ(std::vector<int64_t>({u.batch, u.in_h, u.in_w, u.channels, u.out_h, u.out_w}),
            std::vector<int64_t>({2, 6, 6, 4, 5, 7}));
  EXPECT_TRUE(u.align_corners);
  EXPECT_EQ(encode(u, true), bilinear.attributes);

  b.concat({x, b.input("y", {2, 6, 6, 3})});
  const Node& concat = last_node(graph, "concat");
  const ConcatParams c = concat_params(concat);
  EXPECT_EQ(c.rows, 72);
  EXPECT_EQ(c.widths, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(encode(c), concat.attributes);
  b.split(x, {1, 3});
  const Node& split = last_node(graph, "split");
  EXPECT_EQ(concat_params(split).widths, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(encode(concat_params(split)), split.attributes);
}

TEST(OpParams, DropPathYoloLossDecode) {
  Graph graph;
  GraphBuilder b(graph);
  b.dropout(b.input("a", {5}), 0.5);  // 2 Philox blocks before the drop-path's
  b.drop_path(b.input("x", {3, 2, 2, 4}), 0.25);
  const Node& drop = last_node(graph, "drop_path");
  const DropPathParams d = drop_path_params(drop);
  EXPECT_EQ(std::vector<int64_t>({d.samples, d.per_sample, d.block_offset}), std::vector<int64_t>({3, 16, 2}));
  EXPECT_EQ(d.p, 0.25);
  EXPECT_EQ(encode(d), drop.attributes);

  const int64_t classes = 2, channels = 3 * (5 + classes);
  b.yolo_loss(b.input("h0", {2, 4, 4, channels}), b.input("h1", {2, 2, 2, channels}),
              b.input("h2", {2, 1, 1, channels}), b.input("truth", {2, 6, 5}), classes);
  const Node& yolo = last_node(graph, "yolo_loss");
  const YoloLossParams y = yolo_loss_params(yolo);
  EXPECT_EQ(std::vector<int64_t>({y.batch, y.boxes, y.classes, y.grid[0], y.grid[1], y.grid[2]}),
            std::vector<int64_t>({2, 6, 2, 4, 2, 1}));
  EXPECT_EQ(encode(y), yolo.attributes);

  const TensorId counter = b.buffer("counter", {1}, DType::kInt32);
  const TensorId cache = b.buffer("cache", {2, 3, 5, 4}, DType::kFloat32);
  b.write_at_counter(cache, b.input("step", {2, 3, 4}), counter, 1);
  const Node& write = last_node(graph, "write_at_counter");
  const WriteAtCounterParams w = write_at_counter_params(write);
  EXPECT_EQ(std::vector<int64_t>({w.outer, w.time, w.inner, w.element_bytes, w.offset}),
            std::vector<int64_t>({6, 5, 4, 4, 1}));
  EXPECT_EQ(encode(w), write.attributes);

  b.end_sentences(b.buffer("ids", {3, 7}, DType::kInt32), b.buffer("lengths", {3}, DType::kInt32), 2, 1);
  const Node& end = last_node(graph, "end_sentences");
  const EndSentencesParams e = end_sentences_params(end);
  EXPECT_EQ(std::vector<int64_t>({e.rows, e.time, e.eos, e.pad}), std::vector<int64_t>({3, 7, 2, 1}));
  EXPECT_EQ(encode(e), end.attributes);
}

// The geometry checks moved into the conv2d and pooling families; the CPU reference still reaches them by its
// own names.
TEST(OpParams, GeometryChecksAreTheFamiliesOwn) {
  Conv2dGeometry g;
  g.batch = 1, g.in_h = g.in_w = 4, g.in_c = g.out_c = g.groups = 2, g.kernel_h = g.kernel_w = 2;
  g.stride_h = g.stride_w = 2, g.out_h = g.out_w = 2;
  EXPECT_NO_THROW(check_conv2d_geometry(g));
  EXPECT_NO_THROW(check_pool_geometry(g));
  g.out_h = 3;
  EXPECT_THROW(check_conv2d_geometry(g), UsageError);
  EXPECT_THROW(cpu::check_conv2d_geometry(g), UsageError);
  EXPECT_THROW(cpu::check_pool_geometry(g), UsageError);
}

// Each moved family answers from the registry, and detachment is what backward_rules.cpp's list said: of the
// memory ops, stop_gradient alone.
TEST(OpParams, MovedFamiliesAreInTheRegistry) {
  for (const char* op : {"gemm", "add", "bias_backward", "add_broadcast", "select_column", "dropout", "layernorm",
                         "embedding", "masked_softmax", "softmax_cross_entropy", "span_loss", "cast", "view",
                         "conv2d", "conv2d_backward_data", "batchnorm", "max_pool2d", "avg_pool2d_backward",
                         "upsample_nearest", "concat", "drop_path", "yolo_loss", "glu", "weight_norm", "scale_rows",
                         "argmax", "copy", "stop_gradient", "add_n", "leaky_relu_backward"}) {
    EXPECT_NE(find_op_def(op), nullptr) << op;
  }
  // Detached, as torch's .detach(): stop_gradient, and Mask R-CNN's anchors, proposals and target assignment.
  const std::set<std::string_view> detached = {"stop_gradient", "anchor_grid", "rpn_proposals", "rpn_targets",
                                               "roi_sample", "mask_targets"};
  for (const OpDef& op : op_registry()) EXPECT_EQ(op.detached, detached.count(op.name) == 1) << op.name;
}

}  // namespace
}  // namespace sb
