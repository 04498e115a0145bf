// The memory planner on hand-built graphs: region layout and alignment, activations sharing memory only
// when their lifetimes are disjoint (checked exhaustively on random graphs), gradients in backward order,
// buckets, and the largest-batch search.
#include <gtest/gtest.h>

#include <random>

#include "scalebench/error.h"
#include "scalebench/planner.h"
#include "tests/unit/chain_graph.h"

namespace sb {
namespace {

TensorId add(Graph& graph, const std::string& name, std::vector<int64_t> shape, TensorRole role,
             TensorId gradient_of = kNoTensor) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(shape);
  info.role = role;
  info.gradient_of = gradient_of;
  return graph.add_tensor(info);
}

// x -> h = f(x, w1) -> y = g(h, w2); backward writes dw2 first, then dw1.
struct TwoLayer {
  Graph graph;
  TensorId x, w1, w2, h, y, dy, dh, dw1, dw2;
  TwoLayer() {
    x = add(graph, "x", {8, 16}, TensorRole::kInput);
    w1 = add(graph, "w1", {16, 32}, TensorRole::kParameter);
    w2 = add(graph, "w2", {32, 4}, TensorRole::kParameter);
    h = add(graph, "h", {8, 32}, TensorRole::kActivation);
    y = add(graph, "y", {8, 4}, TensorRole::kActivation);
    dy = add(graph, "dy", {8, 4}, TensorRole::kActivation);
    dh = add(graph, "dh", {8, 32}, TensorRole::kActivation);
    dw1 = add(graph, "dw1", {16, 32}, TensorRole::kGradient, w1);
    dw2 = add(graph, "dw2", {32, 4}, TensorRole::kGradient, w2);
    graph.add_node(Node{"gemm", {x, w1}, {h}, {}, false});
    graph.add_node(Node{"gemm", {h, w2}, {y}, {}, false});
    graph.add_node(Node{"loss_backward", {y}, {dy}, {}, true});
    graph.add_node(Node{"gemm", {h, dy}, {dw2}, {}, true});
    graph.add_node(Node{"gemm", {dy, w2}, {dh}, {}, true});
    graph.add_node(Node{"gemm", {x, dh}, {dw1}, {}, true});
  }
};

TEST(Planner, RegionsInOrderAlignedAndCounted) {
  TwoLayer t;
  MemoryPlan plan = plan_memory(t.graph, PlanOptions{1 << 20, 256});
  // Parameters and gradients both in backward order: w2/dw2 first.
  EXPECT_EQ(plan.offsets[t.w2], 0u);
  EXPECT_EQ(plan.offsets[t.w1], 512u);  // 32*4*4 = 512 bytes
  EXPECT_EQ(plan.parameter_bytes, 512u + 2048u);
  EXPECT_EQ(plan.gradient_order, (std::vector<TensorId>{t.dw2, t.dw1}));
  EXPECT_EQ(plan.gradient_region_offset, 2560u);
  EXPECT_EQ(plan.offsets[t.dw2] - plan.gradient_region_offset, plan.offsets[t.w2]);
  EXPECT_EQ(plan.offsets[t.dw1] - plan.gradient_region_offset, plan.offsets[t.w1]);
  EXPECT_EQ(plan.input_bytes, 8u * 16 * 4);
  for (uint64_t offset : plan.offsets) EXPECT_EQ(offset % 256, 0u);
  EXPECT_EQ(plan.gradient_ready_node, (std::vector<int>{3, 5}));
  EXPECT_GE(plan.total_bytes, plan.parameter_bytes + plan.gradient_bytes + plan.input_bytes +
                                  plan.activation_peak_bytes);
}

// --strategy zero1: the parameter region padded to shards x alignment, so that it splits into equal aligned shards an
// all-gather moves whole; the shards cover every parameter once; a plan for one count refuses another.
TEST(Planner, ParameterShardsSplitThePaddedRegion) {
  TwoLayer t;
  for (int ranks : {1, 2, 3, 8}) {
    PlanOptions options{1 << 20, 256};
    options.parameter_shards = ranks;
    const MemoryPlan plan = plan_memory(t.graph, options);
    EXPECT_EQ(plan.parameter_bytes, 2560u) << "the parameters themselves do not move";
    EXPECT_EQ(plan.gradient_region_offset % (256u * static_cast<uint64_t>(ranks)), 0u) << ranks;
    EXPECT_GE(plan.gradient_region_offset, plan.parameter_bytes) << ranks;
    EXPECT_EQ(plan.offsets[t.dw1] - plan.gradient_region_offset, plan.offsets[t.w1]) << "still one region apart";
    int64_t next = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      const ParameterShard shard = parameter_shard(plan, rank, ranks);
      EXPECT_EQ(shard.stride * ranks * 4, static_cast<int64_t>(plan.gradient_region_offset)) << ranks;
      EXPECT_EQ(shard.stride % 64, 0) << "256-byte aligned shards";
      ASSERT_EQ(shard.ranges.size(), 1u) << "contiguous";
      EXPECT_EQ(shard.ranges[0].first, next) << ranks << " rank " << rank;
      next = shard.ranges[0].first + shard.count;
    }
    EXPECT_EQ(next, 640) << "2,560 bytes of parameters, each once";
  }
  EXPECT_EQ(parameter_shard(plan_memory(t.graph, PlanOptions{1 << 20, 256, 8}), 7, 8).count, 0)
      << "8 shards of 128 floats: the last lies in the padding";
  EXPECT_THROW(parameter_shard(plan_memory(t.graph, PlanOptions{1 << 20, 256, 2}), 0, 4), UsageError);
  EXPECT_THROW(parameter_shard(plan_memory(t.graph, PlanOptions{1 << 20, 256, 2}), 2, 2), UsageError);
  EXPECT_THROW(parameter_shard(plan_memory(t.graph, PlanOptions{1 << 20, 256, 4}), 0, 3), UsageError);
  // A divisor of the plan's count (a --gpus-sweep point): the same region in fewer, still aligned shards.
  const MemoryPlan four = plan_memory(t.graph, PlanOptions{1 << 20, 256, 4});
  const ParameterShard half = parameter_shard(four, 1, 2);
  EXPECT_EQ(half.stride * 2 * 4, static_cast<int64_t>(four.gradient_region_offset));
  EXPECT_EQ(half.stride % 64, 0);
  EXPECT_THROW(plan_memory(t.graph, PlanOptions{1 << 20, 256, 0}), UsageError);
}

// --strategy zero2: every bucket (an oversized gradient's pieces too) starts on and is padded to shards x alignment
// bytes, so each splits into equal aligned chunks; the parameters keep the same gaps; rank r's shard is the r-th
// chunk of every bucket, and the ranks' shards tile the region; the plan refuses buckets of another size.
TEST(Planner, ShardsByBucketPadEveryBucketToEqualChunks) {
  TwoLayer t;
  PlanOptions options{512, 256, 3};  // dw2 (512 bytes) one bucket; dw1 (2,048) oversized: pieces
  options.shard_by_bucket = true;
  const MemoryPlan plan = plan_memory(t.graph, options);
  const uint64_t unit = 3 * 256;
  EXPECT_EQ(plan.offsets[t.w2], 0u);
  EXPECT_EQ(plan.offsets[t.w1], unit) << "dw2's bucket padded to one unit before dw1";
  EXPECT_EQ(plan.parameter_bytes, unit + 2048);
  EXPECT_EQ(plan.gradient_region_offset, 4 * unit);
  EXPECT_EQ(plan.gradient_bytes, 4 * unit) << "the last piece's padding belongs to the region";
  EXPECT_EQ(plan.offsets[t.dw1] - plan.gradient_region_offset, plan.offsets[t.w1]) << "still one region apart";
  ASSERT_EQ(plan.buckets.size(), 4u);
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    EXPECT_EQ(plan.buckets[b].offset - plan.gradient_region_offset, b * unit) << b;
    EXPECT_EQ(plan.buckets[b].bytes, unit) << b;
  }
  std::vector<int> owners(plan.gradient_region_offset / 4, 0);
  for (int rank = 0; rank < 3; ++rank) {
    const ParameterShard shard = parameter_shard(plan, rank, 3);
    EXPECT_EQ(shard.stride, 0);
    ASSERT_EQ(shard.ranges.size(), 4u);
    EXPECT_EQ(shard.count, 4 * 64);
    for (size_t b = 0; b < 4; ++b) {
      EXPECT_EQ(shard.ranges[b].first, static_cast<int64_t>(b * unit / 4 + 64 * rank)) << rank << " bucket " << b;
      for (int64_t i = 0; i < shard.ranges[b].count; ++i) ++owners.at(shard.ranges[b].first + i);
    }
  }
  for (int owner : owners) ASSERT_EQ(owner, 1) << "every element of the region in exactly one shard";
  EXPECT_EQ(cut_gradient_buckets(t.graph, plan, 512).size(), plan.buckets.size());
  EXPECT_THROW(cut_gradient_buckets(t.graph, plan, 1024), UsageError) << "the gaps follow the plan's own buckets";
  // One bucket of both gradients: 2,560 bytes is already a multiple of 2 x 256.
  options = PlanOptions{1 << 20, 256, 2};
  options.shard_by_bucket = true;
  const MemoryPlan whole = plan_memory(t.graph, options);
  ASSERT_EQ(whole.buckets.size(), 1u);
  EXPECT_EQ(whole.buckets[0].bytes, 2560u);
  EXPECT_EQ(parameter_shard(whole, 1, 2).ranges[0].first, 320);
  // A divisor of the plan's 3 shards: one rank holds every bucket whole; 2 does not divide 3.
  EXPECT_EQ(parameter_shard(plan, 0, 1).count, 4 * 192);
  EXPECT_THROW(parameter_shard(plan, 0, 2), UsageError);
}

using test::Chain;

// --strategy zero2/zero3 with gradient blocks: the flat layout, the parameters and the buckets are the by-bucket
// plan's, but no gradient region is allocated; each bucket's gradients are one block of the shared region, at their
// offsets relative to the bucket, alive from the first writer until after the next block's last writer, never sharing
// bytes with a tensor or block live at the same time; the arena is smaller, and its categories still add up.
TEST(Planner, GradientBlocksLiveInTheSharedRegionUntilReleased) {
  Chain chain(12);
  PlanOptions options{2048, 256, 2};  // two weights per bucket: 6 buckets of 2 KiB
  options.shard_by_bucket = true;
  const MemoryPlan flat = plan_memory(chain.graph, options);
  options.gradient_blocks = true;
  const MemoryPlan plan = plan_memory(chain.graph, options);
  ASSERT_TRUE(plan.gradients_in_blocks);
  EXPECT_EQ(plan.gradient_bytes, flat.gradient_bytes);
  EXPECT_EQ(plan.gradient_region_offset, flat.gradient_region_offset);
  for (TensorId w : chain.weights) EXPECT_EQ(plan.offsets[w], flat.offsets[w]) << "the parameters as laid out flat";
  ASSERT_EQ(plan.buckets.size(), 6u);
  ASSERT_EQ(plan.gradient_blocks.size(), 6u);
  EXPECT_EQ(plan.offsets[chain.graph.tensors_with_role(TensorRole::kInput).front()], plan.gradient_region_offset)
      << "the inputs follow the parameters: no gradient region";
  EXPECT_LT(plan.total_bytes, flat.total_bytes);
  const int last_node = static_cast<int>(chain.graph.nodes().size()) - 1;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const GradientBucket& bucket = plan.buckets[b];
    EXPECT_EQ(bucket.offset, flat.buckets[b].offset);
    EXPECT_EQ(bucket.bytes, flat.buckets[b].bytes);
    const GradientBlock& block = plan.gradient_blocks.at(static_cast<size_t>(bucket.block));
    EXPECT_EQ(bucket.data_offset, block.offset) << "one bucket per block";
    for (size_t i = bucket.first; i <= bucket.last; ++i) {
      const TensorId g = plan.gradient_order[i];
      EXPECT_EQ(plan.offsets[g] - bucket.data_offset, flat.offsets[g] - flat.buckets[b].offset) << "at its place";
    }
    EXPECT_EQ(block.ready_after_node, bucket.ready_after_node);
    // Buckets finish in flat order; each is released at the next one's last writer, the last at the last node.
    const int expected = b + 1 < plan.buckets.size() ? plan.buckets[b + 1].ready_after_node : last_node;
    EXPECT_EQ(block.released_after_node, expected) << "bucket " << b;
    EXPECT_GE(block.offset, plan.offsets[chain.graph.tensors_with_role(TensorRole::kInput).front()]);
    EXPECT_LE(block.offset + block.bytes, plan.total_bytes);
  }
  // Nothing live at the same time shares a byte: the blocks with each other and with every activation.
  struct Span {
    uint64_t begin, end;
    int first, last;
  };
  std::vector<Span> spans;
  for (const GradientBlock& block : plan.gradient_blocks) {
    spans.push_back({block.offset, block.offset + block.bytes, block.first_node, block.released_after_node});
  }
  for (TensorId a : chain.activations) {
    spans.push_back({plan.offsets[a], plan.offsets[a] + chain.graph.tensor(a).bytes(), plan.first_use[a],
                     plan.last_use[a]});
  }
  int shared = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const bool together = spans[i].first <= spans[j].last && spans[j].first <= spans[i].last;
      const bool overlap = spans[i].begin < spans[j].end && spans[j].begin < spans[i].end;
      ASSERT_FALSE(together && overlap) << "spans " << i << " and " << j;
      shared += overlap;
    }
  }
  EXPECT_GT(shared, 0) << "blocks reuse bytes of what died before them";
  const PlanCategories c = plan_categories(chain.graph, plan);
  EXPECT_LT(c.gradients, plan.gradient_bytes) << "only the blocks live at the peak (here none: the forward's end)";
  EXPECT_EQ(c.parameters + c.gradients + c.optimizer_state + c.running_state + c.inputs + c.activations + c.workspace +
                c.padding,
            plan.total_bytes);
  // Reductions after the backward pass: every block lives to the end.
  options.gradient_blocks_until_end = true;
  for (const GradientBlock& block : plan_memory(chain.graph, options).gradient_blocks) {
    EXPECT_EQ(block.released_after_node, last_node);
  }
  options.shard_by_bucket = false;
  EXPECT_THROW(plan_memory(chain.graph, options), UsageError) << "blocks are the by-bucket layout's";
}

// A block's gaps are exactly its bytes that no gradient covers: the alignment after a gradient of 400 bytes and the
// bucket's padding to three shards' unit (768 bytes); they and the gradients tile the block.
TEST(Planner, GradientBlockGapsAreTheBytesNoGradientCovers) {
  Graph graph;
  const TensorId a = add(graph, "a", {100}, TensorRole::kParameter);  // 400 bytes: 112 of alignment after it
  const TensorId da = add(graph, "da", {100}, TensorRole::kGradient, a);
  const TensorId b = add(graph, "b", {30}, TensorRole::kParameter);   // 120 bytes
  const TensorId db = add(graph, "db", {30}, TensorRole::kGradient, b);
  graph.add_node(Node{"grad", {}, {db}, {}, true});
  graph.add_node(Node{"grad", {}, {da}, {}, true});
  PlanOptions options{1 << 20, 256, 3};
  options.shard_by_bucket = true;
  options.gradient_blocks = true;
  const MemoryPlan plan = plan_memory(graph, options);
  ASSERT_EQ(plan.gradient_blocks.size(), 1u);
  const GradientBlock& block = plan.gradient_blocks[0];
  EXPECT_EQ(block.bytes, 768u) << "db at 0 (120), da at 256 (400): 656 bytes, padded to 768";
  ASSERT_EQ(block.gaps.size(), 2u);
  EXPECT_EQ(block.gaps[0].offset, 120u);
  EXPECT_EQ(block.gaps[0].bytes, 136u);
  EXPECT_EQ(block.gaps[1].offset, 656u);
  EXPECT_EQ(block.gaps[1].bytes, 112u);
  EXPECT_EQ(plan.offsets[db], block.offset);
  EXPECT_EQ(plan.offsets[da], block.offset + 256);
}

// An oversized gradient's pieces are buckets of one block (one tensor), back to back.
TEST(Planner, GradientBlocksKeepAnOversizedGradientsPiecesTogether) {
  TwoLayer t;
  PlanOptions options{512, 256, 2};  // dw2 (512 bytes) one bucket; dw1 (2,048) four pieces
  options.shard_by_bucket = true;
  options.gradient_blocks = true;
  const MemoryPlan plan = plan_memory(t.graph, options);
  ASSERT_EQ(plan.buckets.size(), 5u);
  ASSERT_EQ(plan.gradient_blocks.size(), 2u);
  const GradientBlock& pieces = plan.gradient_blocks[1];
  EXPECT_EQ(pieces.first_bucket, 1u);
  EXPECT_EQ(pieces.last_bucket, 4u);
  EXPECT_EQ(pieces.bytes, 2048u);
  EXPECT_EQ(plan.offsets[t.dw1], pieces.offset);
  for (size_t b = 1; b < 5; ++b) EXPECT_EQ(plan.buckets[b].data_offset, pieces.offset + 512 * (b - 1)) << b;
  EXPECT_EQ(cut_gradient_buckets(t.graph, plan, 512).size(), 5u) << "the plan's own buckets, with their blocks";
  EXPECT_EQ(cut_gradient_buckets(t.graph, plan, 512)[2].data_offset, plan.buckets[2].data_offset);
}

// A view (reshape) takes its storage's offset and keeps the storage alive until the view's last use: a
// tensor created after the storage's own last use must not land on it while the view is still read.
TEST(Planner, ViewsShareTheirStorageAndExtendItsLifetime) {
  Graph graph;
  const TensorId x = add(graph, "x", {4, 8}, TensorRole::kInput);
  const TensorId a = add(graph, "a", {4, 8}, TensorRole::kActivation);
  TensorInfo view_info{"a_view", {32}, DType::kFloat32, TensorRole::kActivation};
  view_info.view_of = a;
  const TensorId a_view = graph.add_tensor(view_info);
  const TensorId b = add(graph, "b", {4, 8}, TensorRole::kActivation);
  const TensorId c = add(graph, "c", {4, 8}, TensorRole::kActivation);
  graph.add_node(Node{"relu", {x}, {a}, {}, false});        // 0: a written
  graph.add_node(Node{"view", {a}, {a_view}, {}, false});   // 1: last use of a itself
  graph.add_node(Node{"relu", {x}, {b}, {}, false});        // 2: b born while the view is live
  graph.add_node(Node{"add", {a_view, b}, {c}, {}, false}); // 3: the view read
  const MemoryPlan plan = plan_memory(graph);
  EXPECT_EQ(plan.offsets[a_view], plan.offsets[a]);
  EXPECT_EQ(plan.last_use[a], 3);
  const uint64_t bytes = graph.tensor(a).bytes();
  auto overlap = [&](TensorId p, TensorId q) {
    return plan.offsets[p] < plan.offsets[q] + bytes && plan.offsets[q] < plan.offsets[p] + bytes;
  };
  EXPECT_FALSE(overlap(a, b));
  EXPECT_FALSE(overlap(a, c));
  TensorInfo wrong{"wrong", {5}, DType::kFloat32, TensorRole::kActivation};
  wrong.view_of = a;
  graph.add_tensor(wrong);
  EXPECT_THROW(plan_memory(graph), UsageError);
}

TEST(Planner, DisjointLifetimesShareMemoryOverlappingOnesDoNot) {
  TwoLayer t;
  MemoryPlan plan = plan_memory(t.graph);
  // Lifetimes: h 0..3, y 1..2, dy 2..4, dh 4..5. h is live with y and dy; dh may reuse h's or y's memory.
  auto overlaps = [&](TensorId a, TensorId b) {
    const uint64_t a_end = plan.offsets[a] + t.graph.tensor(a).bytes();
    const uint64_t b_end = plan.offsets[b] + t.graph.tensor(b).bytes();
    return plan.offsets[a] < b_end && plan.offsets[b] < a_end;
  };
  EXPECT_FALSE(overlaps(t.h, t.y));
  EXPECT_FALSE(overlaps(t.h, t.dy));
  EXPECT_FALSE(overlaps(t.y, t.dy));
  EXPECT_FALSE(overlaps(t.dy, t.dh));
  EXPECT_TRUE(overlaps(t.dh, t.h) || overlaps(t.dh, t.y));
  // The peak is below the sum of all activations: something was reused.
  uint64_t sum = 0;
  for (TensorId id : {t.h, t.y, t.dy, t.dh}) sum += t.graph.tensor(id).bytes();
  EXPECT_LT(plan.activation_peak_bytes, sum);
}

TEST(Planner, RandomGraphsNeverOverlapLiveTensors) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    Graph graph;
    std::vector<TensorId> activations;
    const int count = 5 + static_cast<int>(random() % 40);
    for (int i = 0; i < count; ++i) {
      activations.push_back(add(graph, "a" + std::to_string(i), {1 + static_cast<int64_t>(random() % 300)},
                                i % 7 == 0 ? TensorRole::kWorkspace : TensorRole::kActivation));
    }
    const int nodes = 3 + static_cast<int>(random() % 30);
    for (int n = 0; n < nodes; ++n) {
      Node node{"op", {}, {}, {}, false};
      node.inputs.push_back(activations[random() % activations.size()]);
      node.outputs.push_back(activations[random() % activations.size()]);
      graph.add_node(node);
    }
    MemoryPlan plan = plan_memory(graph, PlanOptions{1 << 20, 64});
    for (TensorId a : activations) {
      for (TensorId b : activations) {
        if (a >= b) continue;
        const int a_first = plan.first_use[a] < 0 ? 0 : plan.first_use[a];
        const int a_last = plan.last_use[a] < 0 ? nodes : plan.last_use[a];
        const int b_first = plan.first_use[b] < 0 ? 0 : plan.first_use[b];
        const int b_last = plan.last_use[b] < 0 ? nodes : plan.last_use[b];
        if (a_first > b_last || b_first > a_last) continue;  // never live together
        const uint64_t a_end = plan.offsets[a] + graph.tensor(a).bytes();
        const uint64_t b_end = plan.offsets[b] + graph.tensor(b).bytes();
        ASSERT_FALSE(plan.offsets[a] < b_end && plan.offsets[b] < a_end)
            << "trial " << trial << ": tensors " << a << " and " << b << " are live together and overlap";
      }
    }
    for (TensorId a : activations) {
      EXPECT_LE(plan.offsets[a] + graph.tensor(a).bytes(), plan.total_bytes);
    }
  }
}

TEST(Planner, BucketsCoverGradientsInOrderAndCloseAtTheirSize) {
  Graph graph;
  std::vector<TensorId> gradients;
  for (int i = 0; i < 6; ++i) {
    TensorId p = add(graph, "p" + std::to_string(i), {256}, TensorRole::kParameter);  // 1 KiB each
    gradients.push_back(add(graph, "g" + std::to_string(i), {256}, TensorRole::kGradient, p));
  }
  // Written in reverse declaration order, as a backward pass does.
  for (int i = 5; i >= 0; --i) graph.add_node(Node{"grad", {}, {gradients[static_cast<size_t>(i)]}, {}, true});
  MemoryPlan plan = plan_memory(graph, PlanOptions{2048, 256});
  ASSERT_EQ(plan.gradient_order.front(), gradients[5]);
  ASSERT_EQ(plan.buckets.size(), 3u);
  uint64_t covered = 0;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    EXPECT_EQ(plan.buckets[b].bytes, 2048u);
    EXPECT_EQ(plan.buckets[b].first, 2 * b);
    EXPECT_EQ(plan.buckets[b].ready_after_node, static_cast<int>(2 * b + 1));
    covered += plan.buckets[b].bytes;
  }
  EXPECT_EQ(covered, plan.gradient_bytes);
}

TEST(Planner, AGradientLargerThanABucketIsCutIntoAlignedPieces) {
  Graph graph;
  TensorId small_p = add(graph, "small", {256}, TensorRole::kParameter);  // 1 KiB
  TensorId small_g = add(graph, "g.small", {256}, TensorRole::kGradient, small_p);
  TensorId table_p = add(graph, "table", {1300}, TensorRole::kParameter);  // 5200 B: 2048 + 2048 + 1104
  TensorId table_g = add(graph, "g.table", {1300}, TensorRole::kGradient, table_p);
  graph.add_node(Node{"grad", {}, {small_g}, {}, true});
  graph.add_node(Node{"grad", {}, {table_g}, {}, true});  // written last, like an embedding table
  MemoryPlan plan = plan_memory(graph, PlanOptions{2048, 256});
  ASSERT_EQ(plan.buckets.size(), 4u);
  EXPECT_EQ(plan.buckets[0].bytes, 1024u);  // the small gradient's bucket, closed before the table's pieces
  const uint64_t table = plan.offsets[static_cast<size_t>(table_g)];
  const uint64_t expected_bytes[] = {2048, 2048, 1104};
  for (size_t b = 1; b < 4; ++b) {
    EXPECT_EQ(plan.buckets[b].offset, table + 2048 * (b - 1));
    EXPECT_EQ(plan.buckets[b].offset % 256, 0u);
    EXPECT_EQ(plan.buckets[b].bytes, expected_bytes[b - 1]);
    EXPECT_EQ(plan.buckets[b].first, 1u);
    EXPECT_EQ(plan.buckets[b].last, 1u);
    EXPECT_EQ(plan.buckets[b].ready_after_node, 1);
  }
}

TEST(Planner, CategoriesAddUpToTheArena) {
  Graph graph;
  const TensorId x = add(graph, "x", {8, 16}, TensorRole::kInput);                  // 512 bytes
  const TensorId w = add(graph, "w", {16, 32}, TensorRole::kParameter);             // 2048
  const TensorId dw = add(graph, "dw", {16, 32}, TensorRole::kGradient, w);         // 2048
  const TensorId h = add(graph, "h", {8, 32}, TensorRole::kActivation);             // 1024, nodes 0..3
  const TensorId workspace = add(graph, "ws", {128}, TensorRole::kWorkspace);       // 512, node 0 only
  const TensorId y = add(graph, "y", {8, 4}, TensorRole::kActivation);              // 128, nodes 1..2
  const TensorId dy = add(graph, "dy", {8, 4}, TensorRole::kActivation);            // 128, nodes 2..3
  graph.add_node(Node{"gemm", {x, w, workspace}, {h}, {}, false});
  graph.add_node(Node{"gemm", {h}, {y}, {}, false});
  graph.add_node(Node{"loss_backward", {y}, {dy}, {}, true});
  graph.add_node(Node{"gemm", {x, dy, h}, {dw}, {}, true});
  const MemoryPlan plan = plan_memory(graph, PlanOptions{1 << 20, 256});
  const PlanCategories c = plan_categories(graph, plan);
  EXPECT_EQ(c.parameters, 2048u);
  EXPECT_EQ(c.gradients, 2048u);
  EXPECT_EQ(c.optimizer_state, 0u);
  EXPECT_EQ(c.inputs, 512u);
  // Live bytes: node 0 h + ws = 1536, node 1 h + y = 1152, node 2 h + y + dy = 1280, node 3 h + dy = 1152.
  EXPECT_EQ(c.activations, 1024u);
  EXPECT_EQ(c.workspace, 512u);
  EXPECT_EQ(c.parameters + c.gradients + c.optimizer_state + c.running_state + c.inputs + c.activations +
                c.workspace + c.padding,
            plan.total_bytes);
}

TEST(Planner, CategoriesAddUpOnRandomGraphs) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 30; ++trial) {
    Graph graph;
    std::vector<TensorId> tensors;
    const int count = 4 + static_cast<int>(random() % 30);
    for (int i = 0; i < count; ++i) {
      const TensorRole role = i % 5 == 0 ? TensorRole::kWorkspace : i % 3 == 0 ? TensorRole::kInput : TensorRole::kActivation;
      tensors.push_back(add(graph, "t" + std::to_string(i), {1 + static_cast<int64_t>(random() % 500)}, role));
    }
    for (int n = 0; n < 2 + static_cast<int>(random() % 20); ++n) {
      graph.add_node(Node{"op", {tensors[random() % tensors.size()]}, {tensors[random() % tensors.size()]}, {}, false});
    }
    const MemoryPlan plan = plan_memory(graph, PlanOptions{1 << 20, 128});
    const PlanCategories c = plan_categories(graph, plan);
    EXPECT_EQ(c.inputs + c.activations + c.workspace + c.padding, plan.total_bytes) << "trial " << trial;
    EXPECT_LE(c.activations + c.workspace, plan.activation_peak_bytes) << "trial " << trial;
  }
}

TEST(Planner, RefusesParametersWithoutGradientsAndOrphanGradients) {
  Graph no_gradient;
  add(no_gradient, "w", {4}, TensorRole::kParameter);
  EXPECT_THROW(plan_memory(no_gradient), UsageError);

  Graph never_written;
  TensorId w = add(never_written, "w", {4}, TensorRole::kParameter);
  add(never_written, "dw", {4}, TensorRole::kGradient, w);
  EXPECT_THROW(plan_memory(never_written), UsageError);

  Graph orphan;
  TensorId dx = add(orphan, "dx", {4}, TensorRole::kGradient);
  orphan.add_node(Node{"grad", {}, {dx}, {}, true});
  EXPECT_THROW(plan_memory(orphan), UsageError);
}

TEST(Planner, GraphRejectsBadShapesAndUnknownTensors) {
  Graph graph;
  EXPECT_THROW(add(graph, "bad", {4, 0}, TensorRole::kActivation), UsageError);
  EXPECT_THROW(graph.add_node(Node{"op", {3}, {}, {}, false}), UsageError);
  TensorId w = add(graph, "w", {3, 5}, TensorRole::kParameter);
  EXPECT_EQ(graph.parameter_count(), 15);
  EXPECT_EQ(graph.tensor(w).bytes(), 60u);
}

TEST(Planner, LargestBatchThatFits) {
  auto bytes = [](int64_t batch) { return static_cast<uint64_t>(1000 + 100 * batch); };
  EXPECT_EQ(largest_batch_that_fits(bytes, 1000 + 100 * 37, 1 << 20), 37);
  EXPECT_EQ(largest_batch_that_fits(bytes, 1000 + 100 * 37 + 99, 1 << 20), 37);
  EXPECT_EQ(largest_batch_that_fits(bytes, 1099, 1 << 20), 0);
  EXPECT_EQ(largest_batch_that_fits(bytes, 1u << 30, 64), 64);
  // A workload's smallest batch (WorkloadInfo::min_batch) bounds the search: batch 1 is never planned.
  auto from_two = [&](int64_t batch) { return batch < 2 ? throw UsageError("batch 1") : bytes(batch); };
  EXPECT_EQ(largest_batch_that_fits(from_two, 1000 + 100 * 37, 1 << 20, 2), 37);
  EXPECT_EQ(largest_batch_that_fits(from_two, 1000 + 100 * 2 - 1, 1 << 20, 2), 0);
}

}  // namespace
}  // namespace sb
