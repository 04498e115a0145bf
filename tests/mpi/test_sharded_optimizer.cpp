// --strategy zero1 (src/train/gradient_reducer.h) under mpiexec -n 2, 4 and 8 on the CPU device: the gradients are
// all-reduced as under ddp, each rank's optimizer updates and keeps state for its shard of the parameters alone,
// and the updated shards are all-gathered. Each element's update reads only its own gradient and state (and, when
// clipped, the norm over every gradient, which every rank computes from the same reduced gradients), so the weights
// after several steps are ddp's bit for bit on every rank, whether the update runs bucket by bucket or at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/backends.h"
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

// The weights after three steps; *updated: the flat parameters (alignment padding included) this rank's optimizer
// covered; *state_floats: the state it held for them.
std::vector<float> trained_weights(const Case& c, DataParallelStrategy strategy, int64_t* updated,
                                   int64_t* state_floats, int64_t* flat = nullptr) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  ReplicaOptions options;
  options.workload = c.workload;
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.bucket_bytes = 4096;  // many buckets: the per-bucket update meets the shard's edges inside buckets
  options.ranks = world().size();
  options.strategy = DataParallelStrategy::kZero1;  // both runs: the same layout (the ddp run ignores the shards)
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
  *updated = replica->executor->optimizer_shard_count();
  if (flat != nullptr) *flat = static_cast<int64_t>(replica->plan.parameter_bytes / sizeof(float));
  *state_floats = static_cast<int64_t>(cpu::optimizer_state_bytes(optimizer_state_buffers(c.kind), *updated) / 4);
  return read_parameters(*replica);
}

class ShardedOptimizer : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedOptimizer, TrainsAsDdpBitForBit) {
  const Case c = GetParam();
  int64_t ddp_updated = 0, ddp_state = 0, shard_updated = 0, shard_state = 0, flat = 0;
  const std::vector<float> ddp = trained_weights(c, DataParallelStrategy::kDdp, &ddp_updated, &ddp_state, &flat);
  const std::vector<float> zero1 = trained_weights(c, DataParallelStrategy::kZero1, &shard_updated, &shard_state);
  ASSERT_EQ(ddp.size(), zero1.size());
  int64_t different = 0;
  for (size_t i = 0; i < ddp.size(); ++i) different += ddp[i] != zero1[i];
  EXPECT_EQ(different, 0) << "of " << ddp.size() << " weights";
  // Every rank holds the same weights (the all-gather), and its optimizer covered 1/N of them.
  std::vector<float> all(zero1.size() * static_cast<size_t>(world().size()));
  world().allgather(zero1.data(), all.data(), zero1.size() * sizeof(float));
  for (int r = 1; r < world().size(); ++r) {
    EXPECT_TRUE(std::equal(zero1.begin(), zero1.end(), all.begin() + static_cast<long>(r * zero1.size())))
        << "rank " << r << " differs from rank 0";
  }
  EXPECT_EQ(ddp_updated, flat);
  EXPECT_LE(shard_updated, (ddp_updated + world().size() - 1) / world().size() + 64 * world().size());
  int64_t total = shard_updated;
  world().allreduce_sum(&total, 1);
  EXPECT_EQ(total, ddp_updated) << "the shards cover every parameter once";
  if (optimizer_state_buffers(c.kind) > 0) EXPECT_LT(shard_state, ddp_state) << "the state is the shard's alone";
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
