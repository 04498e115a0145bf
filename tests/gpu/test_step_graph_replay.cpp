// A training step replayed from one captured CUDA graph (issue 25, src/train/step_graph.h) computes what the
// eager step computes: every workload at tiny scale, six steps as the trainer's solo phase issues them (the
// first eager, the second captured, the rest replays), weights and losses against six eager steps from the same
// state. Where two eager runs already differ (kernels that add with atomics), the replay must stay within that
// spread instead. The marks inside the step (forward done, last node) are graph nodes and still time it.
// Skips without a GPU. Run: gpu_tests --gtest_filter='*StepGraphReplay*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "scalebench/executor.h"
#include "scalebench/workload.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"
#include "src/train/step_graph.h"
#include "src/train/sub_steps.h"
#include "tests/gpu/weights_difference.h"
#include "tests/unit/one_rank_group.h"

namespace sb {
namespace {

constexpr int kSteps = 6;

struct Trained {
  std::vector<float> weights;
  std::vector<float> losses;
  std::string graph_status;
  double forward_done_ms = 0, nodes_done_ms = 0, step_ms = 0;  // the last step's marks
};

Trained train(const std::string& workload, Precision precision, CudaGraphMode mode) {
  auto device = make_cuda_device(0);
  const Workload& w = find_workload(workload);
  ReplicaOptions options;
  options.workload = workload;
  options.scale = WorkloadScale::kTiny;
  options.batch = std::max<int64_t>(2, w.info().min_batch);
  options.precision = precision;
  std::unique_ptr<Replica> replica = build_replica(options, *device, 1, 0, 1001);
  weight_losses_locally(*replica);
  Executor& executor = *replica->executor;
  OneRankGroup group;
  StepGraph graph(group, executor, mode, "solo", std::nullopt);
  const OptimizerSettings settings = w.reference_optimizer();
  const LocalStepMarks marks{2, 3};
  Trained out;
  for (int step = 0; step < kSteps; ++step) {
    executor.set_random_stream(1, static_cast<uint64_t>(step));
    executor.mark(0);
    graph.issue(step, [&] { run_local_step(*replica, settings, step + 1, &marks); });
    executor.mark(1);
    out.step_ms = executor.elapsed_ms(0, 1);
    out.forward_done_ms = executor.elapsed_ms(0, marks.forward_done);
    out.nodes_done_ms = executor.elapsed_ms(0, marks.nodes_done);
    float loss = 0;
    executor.read_tensor(replica->built.loss, &loss, sizeof loss);
    out.losses.push_back(loss);
  }
  out.weights = read_parameters(*replica);
  out.graph_status = graph.status();
  return out;
}

class StepGraphReplay : public ::testing::TestWithParam<const Workload*> {};

TEST_P(StepGraphReplay, ReplayedStepsTrainAsEagerOnes) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string name = GetParam()->info().name;
  const Trained eager = train(name, Precision::kBf16, CudaGraphMode::kOff);
  const Trained again = train(name, Precision::kBf16, CudaGraphMode::kOff);
  const Trained replayed = train(name, Precision::kBf16, CudaGraphMode::kOn);
  ASSERT_EQ(replayed.graph_status, "on");
  const double spread = largest_difference(eager.weights, again.weights);
  const double replay_difference = largest_difference(eager.weights, replayed.weights);
  if (spread == 0) {
    EXPECT_EQ(replay_difference, 0.0) << name << ": eager runs agree bit for bit, the replay must too";
    EXPECT_EQ(replayed.losses, eager.losses) << name;
  } else {
    // Atomics make eager runs differ already; the replay is one more such run (a factor of 4 of slack).
    EXPECT_LE(replay_difference, 4 * spread) << name << ": eager runs differ by " << spread;
  }
  EXPECT_GT(replayed.forward_done_ms, 0.0) << name;
  EXPECT_LE(replayed.forward_done_ms, replayed.nodes_done_ms) << name;
  EXPECT_LE(replayed.nodes_done_ms, replayed.step_ms + 1e-3) << name;
}

INSTANTIATE_TEST_SUITE_P(EveryWorkload, StepGraphReplay, ::testing::ValuesIn(workload_registry()),
                         [](const ::testing::TestParamInfo<const Workload*>& info) {
                           return info.param->info().name;
                         });

// fp16: the loss scale, the skip of an overflowing step and the growth counter live on the device, so a
// replayed step scales and skips exactly as an eager one.
TEST(StepGraphReplayFp16, LossScaledStepsReplayBitForBit) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Trained eager = train("transformer_big", Precision::kFp16, CudaGraphMode::kOff);
  const Trained replayed = train("transformer_big", Precision::kFp16, CudaGraphMode::kOn);
  ASSERT_EQ(replayed.graph_status, "on");
  EXPECT_EQ(largest_difference(eager.weights, replayed.weights), 0.0);
  EXPECT_EQ(replayed.losses, eager.losses);
}

}  // namespace
}  // namespace sb
