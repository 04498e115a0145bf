// --strategy zero1 and zero2 (src/train/gradient_reducer.h) under mpiexec -n 2, 4 and 8 on the CPU device.
// zero1: the gradients are all-reduced as under ddp, each rank's optimizer updates and keeps state for its shard of
// the parameters alone, and the updated shards are all-gathered. Each element's update reads only its own gradient
// and state (and, when clipped, the norm over every gradient, which every rank computes from the same reduced
// gradients), so the weights after several steps are ddp's bit for bit on every rank, whether the update runs
// bucket by bucket or at once.
// zero2: each bucket is reduce-scattered instead, so a rank holds only its chunk of every bucket reduced, and a
// clipped step sums the chunks' squares over the ranks.
// zero3: as zero2, but each bucket is gathered before the forward and the backward pass use it instead of after the
// update: the same values reach the same arithmetic, so the weights are zero2's, once gathered whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "collectives/backends.h"
#include "scalebench/error.h"
#include "src/cpu/optimizer.h"
#include "src/train/gradient_reducer.h"
#include "src/train/replica.h"
#include "tests/mpi/mpi_test_world.h"

namespace sb::test {
namespace {

struct Case {
  OptimizerKind kind;
  double max_grad_norm;  // > 0: clipped, so the update waits for every bucket and runs at once
  const char* workload;
};

// `gradient_blocks`: zero2/zero3's gradients in blocks with a shard beside the arena (what run does at full scale);
// false: the layout by bucket with the gradient region whole, which a ddp reducer can reduce.
ReplicaOptions tiny_replica(const char* workload, DataParallelStrategy layout, bool gradient_blocks = true) {
  ReplicaOptions options;
  options.gradient_layout = gradient_blocks ? GradientLayout::kBlocks : GradientLayout::kWhole;
  // A tied table's rows are reduced apart only where the gradients are held whole: dense in every run, so that the
  // ddp run sums what the sharded one sums.
  options.embedding_grad = EmbeddingGradMode::kDense;
  options.workload = workload;
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.bucket_bytes = 4096;  // many buckets: the per-bucket update meets the shard's edges inside buckets
  options.ranks = world().size();
  options.strategy = layout;  // both runs: the same layout (the ddp run ignores the shards)
  return options;
}

// The weights after three steps; *updated: the flat parameters (alignment padding included) this rank's optimizer
// covered; *state_floats: the state it held for them; *flat: the parameters (ddp) or, by bucket, the padded region
// the chunks tile.
// gather_whole: zero3's weights gathered after the last step (as the trainer does); false, as the step left them.
// *region: the flat parameters as laid out in the arena (the CPU device's memory), as far as the gradients reach, gaps
// included. `blocks` false: the sharded run with the regions whole too (zero3's parameters gathered in place).
std::vector<float> trained_weights(const Case& c, DataParallelStrategy layout, DataParallelStrategy strategy,
                                   int64_t* updated, int64_t* state_floats, int64_t* flat = nullptr,
                                   bool gather_whole = true, std::vector<float>* region = nullptr, bool blocks = true) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  // The sharded runs as run trains them (zero2: gradients in blocks; zero3: parameters too); ddp's in the same
  // layout, whole.
  const ReplicaOptions options = tiny_replica(c.workload, layout, blocks && shards_by_bucket(strategy));
  std::unique_ptr<Replica> replica = build_replica(options, *device, 1, world().rank() * options.batch, 7);
  OptimizerSettings settings = default_optimizer(c.kind);
  settings.max_grad_norm = c.max_grad_norm;
  GradientReducer reducer(*device, *communicator, *replica->executor, DType::kFloat32, true, false, nullptr,
                          EmbeddingGradMode::kAuto, nullptr, BufferRegistration::kNone, strategy);
  for (int step = 1; step <= 3; ++step) {
    replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), static_cast<uint64_t>(step));
    reducer.run_nodes_and_reduce();
    reducer.update(settings, step);
    reducer.wait_and_time("the test's all-reduces");
  }
  if (gather_whole) reducer.gather_whole_parameters("the test's gathers");
  if (region != nullptr) {
    const auto* first = static_cast<const float*>(replica->executor->arena_data());
    region->assign(first, first + replica->plan.gradient_bytes / sizeof(float));  // mirrors the gradients
  }
  *updated = replica->executor->optimizer_shard_count();
  if (flat != nullptr) *flat = static_cast<int64_t>(replica->plan.parameter_bytes / sizeof(float));
  if (flat != nullptr && replica->plan.shard_by_bucket) *flat = static_cast<int64_t>(replica->plan.gradient_bytes / 4);
  *state_floats = static_cast<int64_t>(cpu::optimizer_state_bytes(optimizer_state_buffers(c.kind), *updated) / 4);
  if (strategy == DataParallelStrategy::kZero3 && blocks) {
    EXPECT_TRUE(replica->plan.parameters_in_blocks);
    EXPECT_EQ(replica->executor->parameter_shard_bytes(), static_cast<uint64_t>(*updated) * sizeof(float))
        << "the weights a rank keeps: its chunks";
  }
  return read_parameters(*replica, &world());  // zero3: the ranks' parameter shards gathered on the host
}

class ShardedOptimizer : public ::testing::TestWithParam<Case> {};

// The ddp run and the sharded one, in the sharded one's layout; the sharded weights checked to be the same on every
// rank, its shards to cover every parameter (padding included) once and its state to be the shard's.
void train_both(const Case& c, DataParallelStrategy strategy, std::vector<float>* ddp, std::vector<float>* sharded) {
  int64_t ddp_updated = 0, ddp_state = 0, shard_updated = 0, shard_state = 0, flat = 0;
  *ddp = trained_weights(c, strategy, DataParallelStrategy::kDdp, &ddp_updated, &ddp_state, &flat);
  *sharded = trained_weights(c, strategy, strategy, &shard_updated, &shard_state);
  ASSERT_EQ(ddp->size(), sharded->size());
  // Every rank holds the same weights (the all-gathers), and its optimizer covered 1/N of them.
  std::vector<float> all(sharded->size() * static_cast<size_t>(world().size()));
  world().allgather(sharded->data(), all.data(), sharded->size() * sizeof(float));
  for (int r = 1; r < world().size(); ++r) {
    EXPECT_TRUE(std::equal(sharded->begin(), sharded->end(), all.begin() + static_cast<long>(r * sharded->size())))
        << "rank " << r << " differs from rank 0";
  }
  int64_t total = shard_updated;
  world().allreduce_sum(&total, 1);
  if (strategy == DataParallelStrategy::kZero1) {
    EXPECT_EQ(ddp_updated, flat);
    EXPECT_LE(shard_updated, (ddp_updated + world().size() - 1) / world().size() + 64 * world().size());
    EXPECT_EQ(total, ddp_updated) << "the shards cover every parameter once";
  } else {
    EXPECT_EQ(total, flat) << "the chunks tile the padded region: every parameter once, and the buckets' padding";
    EXPECT_EQ(shard_updated * world().size(), flat) << "every rank's chunks are as large";
  }
  if (optimizer_state_buffers(c.kind) > 0) EXPECT_LT(shard_state, ddp_state) << "the state is the shard's alone";
}

TEST_P(ShardedOptimizer, Zero1TrainsAsDdpBitForBit) {
  std::vector<float> ddp, zero1;
  train_both(GetParam(), DataParallelStrategy::kZero1, &ddp, &zero1);
  int64_t different = 0;
  for (size_t i = 0; i < ddp.size(); ++i) different += ddp[i] != zero1[i];
  EXPECT_EQ(different, 0) << "of " << ddp.size() << " weights";
}

// Unclipped, each element's average is the same sum in the same order (bit for bit). Clipped, the squared norm is
// summed chunk by chunk and then over the ranks instead of over the whole region at once: its last bits, and the
// clipping factor's, may differ (3.8e-7 at most seen over three AdamW steps); a norm over the rank's own chunks
// alone would clip by a factor about sqrt(ranks) off, moving the weights by orders of magnitude more.
void expect_trains_as_ddp_by_bucket(const Case& c, DataParallelStrategy strategy) {
  std::vector<float> ddp, sharded;
  train_both(c, strategy, &ddp, &sharded);
  int64_t different = 0;
  double worst = 0;
  for (size_t i = 0; i < ddp.size(); ++i) {
    different += ddp[i] != sharded[i];
    worst = std::max(worst, std::abs(static_cast<double>(ddp[i]) - sharded[i]));
  }
  if (c.max_grad_norm == 0) {
    EXPECT_EQ(different, 0) << "of " << ddp.size() << " weights; largest difference " << worst;
  } else {
    EXPECT_LE(worst, 2e-6) << different << " of " << ddp.size() << " weights differ";
  }
}

TEST_P(ShardedOptimizer, Zero2TrainsAsDdp) { expect_trains_as_ddp_by_bucket(GetParam(), DataParallelStrategy::kZero2); }

// zero3's forward and backward passes read the units gathered before them: the same values as zero2's gathered
// after the update, so the same weights. Here with the parameters in blocks: each unit gathered out of the ranks'
// parameter shards into its forward block, and again into its backward block for the backward copies.
TEST_P(ShardedOptimizer, Zero3TrainsAsDdp) { expect_trains_as_ddp_by_bucket(GetParam(), DataParallelStrategy::kZero3); }

// zero3 gathers nothing after the update (here with the parameters gathered in place, the regions whole): as a step
// leaves them, a rank's own chunks hold the update and the other ranks' chunks their values from before it (stale
// until the next use gathers them); zero2's steps end whole.
TEST(ShardedReduction, Zero3LeavesTheOtherChunksStaleUntilTheyAreGathered) {
  const Case c{OptimizerKind::kAdamW, 0, "bert_base"};
  int64_t updated = 0, state = 0;
  std::vector<float> whole, left;
  trained_weights(c, DataParallelStrategy::kZero3, DataParallelStrategy::kZero2, &updated, &state, nullptr, true,
                  &whole, false);
  trained_weights(c, DataParallelStrategy::kZero3, DataParallelStrategy::kZero3, &updated, &state, nullptr, false,
                  &left, false);
  ASSERT_EQ(whole.size(), left.size());
  const ReplicaOptions options = tiny_replica(c.workload, DataParallelStrategy::kZero3);
  auto device = make_cpu_device();
  const std::unique_ptr<Replica> layout = build_replica(options, *device, 1, 0, 7);
  int64_t own_differ = 0, rest_differ = 0, rest = 0;
  for (const GradientBucket& bucket : layout->plan.buckets) {
    const auto begin = static_cast<int64_t>((bucket.offset - layout->plan.gradient_region_offset) / sizeof(float));
    const auto chunk = static_cast<int64_t>(bucket.bytes / sizeof(float)) / world().size();
    for (int64_t i = begin; i < begin + chunk * world().size(); ++i) {
      if (i >= static_cast<int64_t>(whole.size())) break;  // the last bucket's padding lies past the parameters
      const bool own = (i - begin) / chunk == world().rank();
      const bool differs = whole[static_cast<size_t>(i)] != left[static_cast<size_t>(i)];
      (own ? own_differ : rest_differ) += differs;
      rest += own ? 0 : 1;
    }
  }
  EXPECT_EQ(own_differ, 0) << "the own chunks hold the update";
  EXPECT_GT(rest_differ, rest / 2) << "of " << rest << ": the other chunks were not gathered after the update";
}

// One training pass with its reductions under `strategy` (dense tables, fp32 wire, overlap), waited for: the replica
// and its reducer, which the caller reads.
struct ReducedOnce {
  std::unique_ptr<Replica> replica;
  std::unique_ptr<GradientReducer> reducer;
};
ReducedOnce reduce_once(Device& device, Communicator& communicator, const ReplicaOptions& options,
                        DataParallelStrategy strategy) {
  ReducedOnce out;
  out.replica = build_replica(options, device, 1, world().rank() * options.batch, 7);
  out.reducer = std::make_unique<GradientReducer>(device, communicator, *out.replica->executor, DType::kFloat32, true,
                                                  false, nullptr, EmbeddingGradMode::kDense, nullptr,
                                                  BufferRegistration::kNone, strategy);
  out.replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), 1);
  out.reducer->run_nodes_and_reduce();
  out.reducer->wait_and_time("the test's reductions");
  return out;
}

// The gradient region as the arena holds it (a plan with the region whole).
std::vector<float> gradient_region(const Replica& replica) {
  const auto* arena = static_cast<const unsigned char*>(replica.executor->arena_data());
  const auto* first = reinterpret_cast<const float*>(arena + replica.plan.gradient_region_offset);
  return std::vector<float>(first, first + replica.plan.gradient_bytes / sizeof(float));
}

// zero2 reduce-scatters: after one step's reductions a rank's own chunk of every bucket holds ddp's averaged
// gradients bit for bit, and the rest of the bucket still holds its own, unaveraged ones (an all-reduce would have
// averaged those too).
TEST(ShardedReduction, Zero2LeavesEachRankItsChunkAveragedAndTheRestItsOwn) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  const ReplicaOptions options = tiny_replica("bert_base", DataParallelStrategy::kZero2, false);
  std::vector<std::vector<float>> gradients;
  std::vector<GradientBucket> buckets;
  uint64_t region = 0;
  for (DataParallelStrategy strategy : {DataParallelStrategy::kDdp, DataParallelStrategy::kZero2}) {
    const ReducedOnce reduced = reduce_once(*device, *communicator, options, strategy);
    gradients.push_back(gradient_region(*reduced.replica));
    buckets = reduced.replica->plan.buckets;
    region = reduced.replica->plan.gradient_region_offset;
  }
  int64_t own_differ = 0, rest_differ = 0;
  for (const GradientBucket& bucket : buckets) {
    const auto begin = static_cast<int64_t>((bucket.offset - region) / sizeof(float));
    const auto chunk = static_cast<int64_t>(bucket.bytes / sizeof(float)) / world().size();
    for (int64_t i = begin; i < begin + chunk * world().size(); ++i) {
      const bool own = (i - begin) / chunk == world().rank();
      (own ? own_differ : rest_differ) += gradients[0][static_cast<size_t>(i)] != gradients[1][static_cast<size_t>(i)];
    }
  }
  EXPECT_EQ(own_differ, 0) << "the own chunks are ddp's averages";
  EXPECT_GT(rest_differ, 0) << "the other chunks were not averaged: ranks saw other samples";
}

// With gradient blocks (what zero2 and zero3 train with): each bucket is reduce-scattered out of its block into the
// rank's gradient shard beside the arena, which then holds ddp's averaged gradients of the rank's chunks bit for bit,
// 1/N of them; the arena has no gradient region, and the blocks share the activations' bytes, so it is smaller than
// the layout with the region whole (what that saves at full scale: ReplicaPlan.GradientBlocks... in the unit tests).
TEST(ShardedReduction, GradientBlocksReduceScatterIntoTheShardBesideTheArena) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  std::vector<float> averaged;  // ddp's, the region whole
  uint64_t whole_total = 0;
  {
    const ReplicaOptions whole = tiny_replica("bert_base", DataParallelStrategy::kZero2, false);
    const ReducedOnce reduced = reduce_once(*device, *communicator, whole, DataParallelStrategy::kDdp);
    averaged = gradient_region(*reduced.replica);
    whole_total = reduced.replica->plan.total_bytes;
  }
  const ReplicaOptions options = tiny_replica("bert_base", DataParallelStrategy::kZero2);
  EXPECT_THROW(reduce_once(*device, *communicator, options, DataParallelStrategy::kDdp), UsageError)
      << "ddp reduces a gradient region, which a plan with blocks does not have";
  const ReducedOnce reduced = reduce_once(*device, *communicator, options, DataParallelStrategy::kZero2);
  const std::unique_ptr<Replica>& replica = reduced.replica;
  const GradientReducer& reducer = *reduced.reducer;
  ASSERT_TRUE(replica->plan.gradients_in_blocks);
  const uint64_t shard_bytes = replica->executor->gradient_shard_bytes();
  EXPECT_EQ(shard_bytes * static_cast<uint64_t>(world().size()), replica->plan.gradient_bytes) << "1/N of them";
  int64_t differ = 0, compared = 0;
  for (const ShardRange& r : reducer.shard().ranges) {
    const float* mine = replica->executor->gradients_of(r.first, r.count);
    for (int64_t i = 0; i < r.count; ++i) {
      differ += mine[i] != averaged[static_cast<size_t>(r.first + i)];
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int64_t>(shard_bytes / sizeof(float)));
  EXPECT_EQ(differ, 0) << "of " << compared << ": the shard holds ddp's averages of the rank's chunks";
  EXPECT_LT(replica->plan.total_bytes, whole_total) << "the blocks live in the activations' bytes";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ShardedOptimizer,
                         ::testing::Values(Case{OptimizerKind::kAdamW, 0, "bert_base"},
                                           Case{OptimizerKind::kAdamW, 1.0, "bert_base"},
                                           Case{OptimizerKind::kSgdMomentum, 0, "transformer_big"},
                                           Case{OptimizerKind::kAdamW, 0, "unsupmt"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(optimizer_name(info.param.kind)) +
                                  (info.param.max_grad_norm > 0 ? "_clipped_" : "_") + info.param.workload;
                         });

}  // namespace
}  // namespace sb::test
