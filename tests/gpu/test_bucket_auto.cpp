// --bucket-mb auto on the GPU (issue 26, src/train/bucket_auto.h): the all-reduce sweep runs on a (one-rank)
// NCCL communicator, every size costs device time, and the choice is one of the candidates with the shortest
// predicted tail (ties to the larger). Skips without a GPU. Run: gpu_tests --gtest_filter='BucketAutoGpu*'
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"
#include "src/train/bucket_auto.h"
#include "src/train/bucket_choice.h"
#include "src/train/replica.h"
#include "tests/unit/one_rank_group.h"

namespace sb {
namespace {

TEST(BucketAutoGpu, SweepsOnNcclAndChoosesTheShortestPredictedTail) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto device = make_cuda_device(0);
  OneRankGroup group;
  std::unique_ptr<Communicator> communicator = make_communicator(Backend::kNccl, group, *device, {});
  const Workload& w = find_workload("bert_base");
  TrainOptions options;
  options.workload = "bert_base";
  options.scale = WorkloadScale::kTiny;
  options.precision = Precision::kBf16;
  options.optimizer = w.reference_optimizer();
  ReplicaOptions replica_options;
  replica_options.workload = "bert_base";
  replica_options.scale = WorkloadScale::kTiny;
  replica_options.batch = 8;
  replica_options.precision = Precision::kBf16;
  std::unique_ptr<Replica> replica = build_replica(replica_options, *device, 1, 0, 1001);
  const BucketAuto choice = choose_buckets_by_measurement(group, *device, *communicator, *replica, options, 25 << 20);
  EXPECT_TRUE(choice.kept_default_because.empty()) << choice.kept_default_because;
  ASSERT_GE(choice.candidates.size(), 4u);  // tiny bert's gradients are well under 1 MiB: sizes below it too
  ASSERT_FALSE(choice.measured_ms.empty());
  for (const auto& [bytes, ms] : choice.measured_ms) EXPECT_GT(ms, 0.0) << bytes << " bytes";
  double shortest = choice.candidates.front().predicted_tail_ms;
  for (const auto& c : choice.candidates) shortest = std::min(shortest, c.predicted_tail_ms);
  const auto chosen = std::find_if(choice.candidates.begin(), choice.candidates.end(),
                                   [&](const BucketAuto::Candidate& c) { return c.bytes == choice.chosen_bytes; });
  ASSERT_NE(chosen, choice.candidates.end());
  EXPECT_LE(chosen->predicted_tail_ms, shortest + kTailTieMs);
}

}  // namespace
}  // namespace sb
