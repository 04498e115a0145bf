// The embedding-rows family (src/core/ops/embedding_rows.h): the CPU reference of its four ops on hand-checked
// values, and autodiff's split of a tied table's gradient into a dense part (written early, into the gradient's
// own bytes) and the lookups' rows (added last): on one rank the gradient equals, bit for bit, the sum of the
// gradients of the same graph with the table untied into two parameters.
// Run: unit_tests --gtest_filter='CpuEmbeddingRows*:EngineTiedEmbedding*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/embedding_grad.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/core/ops/embedding_rows.h"
#include "src/cpu/embedding_rows.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

TEST(CpuEmbeddingRows, MarkSkipsPaddingAndUnitesLookups) {
  const std::vector<int32_t> source = {3, 3, 7, 0, 9}, target = {0, 7, 1};
  std::vector<int32_t> flags(10, 0);
  cpu::embedding_rows_mark(source.data(), 5, flags.data(), 10, 0);
  cpu::embedding_rows_mark(target.data(), 3, flags.data(), 10, 0);
  EXPECT_EQ(flags, (std::vector<int32_t>{0, 1, 0, 1, 0, 0, 0, 1, 0, 1}));
  std::vector<int32_t> all(10, 0);
  cpu::embedding_rows_mark(source.data(), 5, all.data(), 10, -1);  // no padding: row 0 is a row like any other
  EXPECT_EQ(all[0], 1);
}

TEST(CpuEmbeddingRows, CompactListsFlaggedRowsAscendingThenMinusOne) {
  // Flags after an all-reduce (max over ranks): positive where any rank marked the row.
  const std::vector<int32_t> flags = {0, 1, 0, 1, 0, 0, 0, 1, 0, 1};
  std::vector<int32_t> rows(10, 42);
  EXPECT_EQ(cpu::embedding_rows_compact(flags.data(), rows.data(), 10), 4);
  EXPECT_EQ(rows, (std::vector<int32_t>{1, 3, 7, 9, -1, -1, -1, -1, -1, -1}));
  const std::vector<int32_t> none(4, 0);
  std::vector<int32_t> empty(4, 5);
  EXPECT_EQ(cpu::embedding_rows_compact(none.data(), empty.data(), 4), 0);
  EXPECT_EQ(empty, (std::vector<int32_t>(4, -1)));
}

TEST(CpuEmbeddingRows, GatherPacksRowsAndZeroesTheRest) {
  const int64_t vocab = 5, dim = 3;
  std::vector<float> late(vocab * dim);
  for (size_t i = 0; i < late.size(); ++i) late[i] = static_cast<float>(i + 1);
  const std::vector<int32_t> rows = {4, 1, -1, -1, -1};
  std::vector<float> packed(vocab * dim, -7.0f);
  cpu::embedding_rows_gather(late.data(), rows.data(), packed.data(), vocab, dim);
  EXPECT_EQ(packed, (std::vector<float>{13, 14, 15, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(CpuEmbeddingRows, ScatterAddAddsRowsInPlaceOrIntoACopy) {
  const int64_t vocab = 4, dim = 2;
  const std::vector<float> dense = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> packed = {10, 20, 30, 40, 99, 99, 99, 99};  // rows after the count are never read
  const std::vector<int32_t> rows = {3, 0, -1, -1};
  const std::vector<float> expected = {31, 42, 3, 4, 5, 6, 17, 28};
  std::vector<float> copy(vocab * dim, 0.0f);
  cpu::embedding_rows_scatter_add(dense.data(), packed.data(), rows.data(), copy.data(), vocab, dim);
  EXPECT_EQ(copy, expected);
  std::vector<float> in_place = dense;
  cpu::embedding_rows_scatter_add(in_place.data(), packed.data(), rows.data(), in_place.data(), vocab, dim);
  EXPECT_EQ(in_place, expected);
}

TEST(CpuEmbeddingRowsDeathTest, RefusesAnIdOutsideTheTableAndANegativeFlag) {
  const std::vector<int32_t> bad = {2, 10};
  std::vector<int32_t> flags(10, 0), rows(10, 0);
  EXPECT_DEATH(cpu::embedding_rows_mark(bad.data(), 2, flags.data(), 10, -1), "out of range");
  flags[3] = -1;
  EXPECT_DEATH(cpu::embedding_rows_compact(flags.data(), rows.data(), 10), "negative");
}

constexpr int64_t kTokens = 6, kVocab = 13, kDim = 4;

// ids -> lookup(in) -> tanh -> linear(., out) -> cross-entropy: tied (in == out, one parameter) or untied.
struct LookupAndProjection {
  Graph graph;
  TensorId ids, targets, in, out, loss;
  std::map<TensorId, TensorId> gradients;

  explicit LookupAndProjection(bool tied, const BackwardOptions& options = {}) {
    GraphBuilder b(graph);
    ids = b.input("ids", {kTokens}, DType::kInt32);
    targets = b.input("targets", {kTokens}, DType::kInt32);
    in = b.parameter("embed", {kVocab, kDim});
    out = tied ? in : b.parameter("projection", {kVocab, kDim});
    loss = b.softmax_cross_entropy(b.linear(b.tanh(b.embedding(ids, in, 0)), out), targets, 0.0, -1);
    gradients = append_backward(graph, loss, options);
  }
};

std::vector<float> run_and_read(LookupAndProjection& m, const std::vector<float>& table, TensorId which) {
  MemoryPlan plan = plan_memory(m.graph);
  CpuExecutor e(m.graph, plan);
  const std::vector<int32_t> ids = {0, 5, 5, 12, 3, 0}, targets = {1, 2, 3, 4, 5, 6};  // 0: padding
  std::copy(ids.begin(), ids.end(), e.i32(m.ids));
  std::copy(targets.begin(), targets.end(), e.i32(m.targets));
  std::copy(table.begin(), table.end(), e.f32(m.in));
  if (m.out != m.in) std::copy(table.begin(), table.end(), e.f32(m.out));
  e.run();
  const float* gradient = e.f32(m.gradients.at(which));
  return std::vector<float>(gradient, gradient + kVocab * kDim);
}

TEST(EngineTiedEmbedding, GradientSplitsIntoADensePartWrittenEarlyAndRowsAddedLast) {
  LookupAndProjection m(true);
  const std::vector<EmbeddingRowsExchange> exchanges = find_embedding_rows_exchanges(m.graph);
  ASSERT_EQ(exchanges.size(), 1u);
  const EmbeddingRowsExchange& x = exchanges[0];
  EXPECT_EQ(x.gradient, m.gradients.at(m.in));
  EXPECT_EQ(m.graph.tensor(x.dense).view_of, x.gradient) << "the dense part is written into the gradient's bytes";
  EXPECT_EQ(x.vocab, kVocab);
  EXPECT_EQ(x.dim, kDim);
  EXPECT_EQ(x.ids, kTokens);
  int dense_writer = -1, lookup_backward = -1;
  for (size_t n = 0; n < m.graph.nodes().size(); ++n) {
    const Node& node = m.graph.nodes()[n];
    if (std::find(node.outputs.begin(), node.outputs.end(), x.dense) != node.outputs.end()) dense_writer = int(n);
    if (node.op == "embedding_backward") lookup_backward = int(n);
  }
  // The mark comes first (ids alone), the projection's weight gradient before the lookup's backward, the rows
  // listed in between, then gathered and added as the last two nodes.
  EXPECT_EQ(x.dense_writer, dense_writer) << "the node whose output is the dense part";
  EXPECT_LT(x.mark_node, dense_writer);
  EXPECT_LT(dense_writer, x.compact_node);
  EXPECT_LT(x.compact_node, lookup_backward);
  EXPECT_LT(lookup_backward, x.gather_node);
  EXPECT_EQ(x.scatter_node, static_cast<int>(m.graph.nodes().size()) - 1);
  // The plan still finds the gradient final at its last writer (the dense --embedding-grad reduces it there).
  const MemoryPlan plan = plan_memory(m.graph);
  EXPECT_EQ(plan.gradient_ready_node.back(), x.scatter_node);
}

TEST(EngineTiedEmbedding, OneRankGradientIsTheUntiedSumBitForBit) {
  const std::vector<float> table = test::random_normal(kVocab * kDim, 17, 0.5f);
  LookupAndProjection tied(true), untied(false);
  EXPECT_TRUE(find_embedding_rows_exchanges(untied.graph).empty()) << "a lookup-only table is not split";
  const std::vector<float> got = run_and_read(tied, table, tied.in);
  const std::vector<float> lookup = run_and_read(untied, table, untied.in);
  const std::vector<float> projection = run_and_read(untied, table, untied.out);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], projection[i] + lookup[i]) << "element " << i << " (row " << i / kDim << ")";
  }
  // Rows no lookup touched (and the padding row 0) hold the projection's part alone.
  for (int64_t c = 0; c < kDim; ++c) {
    EXPECT_EQ(got[static_cast<size_t>(c)], projection[static_cast<size_t>(c)]);
    EXPECT_EQ(got[static_cast<size_t>(kDim + c)], projection[static_cast<size_t>(kDim + c)]);
  }
}

// Where the job reduces the table whole (BackwardOptions::split_tied_table false: rows_apart_refusal), autodiff keeps
// its gradient one sum: no embedding_rows node, the same values; find_tied_tables still finds the table.
TEST(EngineTiedEmbedding, KeptWholeWhereTheJobReducesItWhole) {
  int64_t asked_rows = 0, asked_ids = 0;
  BackwardOptions whole;
  whole.split_tied_table = [&](int64_t rows, int64_t ids) {
    asked_rows = rows, asked_ids = ids;
    return false;
  };
  LookupAndProjection kept(true, whole), split(true);
  EXPECT_EQ(asked_rows, kVocab);
  EXPECT_EQ(asked_ids, kTokens);
  EXPECT_TRUE(find_embedding_rows_exchanges(kept.graph).empty());
  for (const Node& node : kept.graph.nodes()) EXPECT_EQ(node.op.rfind("embedding_rows", 0), std::string::npos) << node.op;
  for (const LookupAndProjection* m : {&kept, &split}) {
    const std::vector<TiedTable> tied = find_tied_tables(m->graph);
    ASSERT_EQ(tied.size(), 1u);
    EXPECT_EQ(tied[0].table, m->in);
    EXPECT_EQ(tied[0].rows, kVocab);
    EXPECT_EQ(tied[0].ids, kTokens);
  }
  EXPECT_TRUE(find_tied_tables(LookupAndProjection(false).graph).empty()) << "a lookup-only table is not tied";
  const std::vector<float> table = test::random_normal(kVocab * kDim, 17, 0.5f);
  EXPECT_EQ(run_and_read(kept, table, kept.in), run_and_read(split, table, split.in)) << "two addends, either order";
}

// The one decision the graph and the reducer share (include/scalebench/embedding_grad.h).
TEST(EmbeddingGrad, RowsApartWhereTheModeRanksAndBoundAllow) {
  // bert_base's 30,522 words, 8,192 ids per rank (batch 64 x 128).
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kSparse, 2, true, 30522, 8192), "");
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kSparse, 1, true, 30522, 8192), "") << "asked for: a test's choice";
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kDense, 2, true, 30522, 10), "--embedding-grad dense");
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kAuto, 1, true, 30522, 10), "one rank reduces nothing");
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kSparse, 2, false, 30522, 10),
            "--no-overlap reduces every bucket after the backward pass");
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kAuto, 2, true, 30522, 8192),
            "ranks x the lookups' ids = 16384 could touch more than half of the 30522 rows");
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kAuto, 2, true, 30522, 7630), "") << "2 x 15,260 <= 30,522";
  EXPECT_NE(rows_apart_refusal(EmbeddingGradMode::kAuto, 2, true, 30522, 7631), "") << "2 x 15,262 > 30,522";
  EXPECT_EQ(rows_apart_refusal(EmbeddingGradMode::kAuto, 64, true, 100, 1000),
            "ranks x the lookups' ids = 64000 could touch more than half of the 100 rows")
      << "the bound is min(rows, ranks x ids); the text names ranks x ids";
}

}  // namespace
}  // namespace sb
