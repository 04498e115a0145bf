// A dp step replayed from one captured CUDA graph (issue 25) trains as the eager dp step, on one GPU: the
// trainer's own dp loop (run_dp_phase: the training pass with each gradient bucket all-reduced by NCCL on the
// communication stream as soon as it is ready, the stream joined back by events, the per-bucket update) over a
// one-rank NCCL communicator. NCCL refuses two ranks on one GPU, so what only two GPUs can show (E(2), ranks
// agreeing) waits for them; this checks on one what the capture itself must get right: the NCCL calls and the
// comm stream's fork and join inside the graph, the bucket events that time the dp timeline, and the weights.
// Every workload at tiny scale with small buckets (several per step, so overlap and per-bucket updates run), and
// bert_base without overlap, with a bf16 wire, and transformer_big in fp16 (device-side loss scaling); the tied
// table's rows reduced apart (sparse) and not (dense); the all-reduces during the backward pass through a second
// communicator limited to 2 CTAs (--overlap-ctas); the gradient buffers registered with NCCL (--grad-registration);
// the sharded update and the all-gather of --strategy zero1, zero2's reduce-scatters, per-bucket gathers and norm
// reduction, and zero3's gathers before use; zero2's and zero3's gradients in blocks with a shard.
// Skips without a GPU. Run: gpu_tests --gtest_filter='*DpStepGraph*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/communicator.h"
#include "scalebench/device.h"
#include "scalebench/optimizer.h"
#include "scalebench/workload.h"
#include "src/train/dp_phase.h"
#include "src/train/gradient_reducer.h"
#include "src/train/overlap_communicator.h"
#include "src/train/phase_steps.h"
#include "src/train/replica.h"
#include "src/train/step_graph.h"
#include "tests/gpu/weights_difference.h"
#include "tests/unit/one_rank_group.h"

namespace sb {
namespace {

constexpr uint64_t kSmallBuckets = 64ull << 10;

struct DpSetup {
  std::string workload;
  Precision precision = Precision::kBf16;
  bool overlap = true;
  DType wire = DType::kFloat32;
  EmbeddingGradMode embedding = EmbeddingGradMode::kAuto;
  int overlap_ctas = 0;
  BufferRegistration registration = BufferRegistration::kNone;
  DataParallelStrategy strategy = DataParallelStrategy::kDdp;
  GradientLayout layout = GradientLayout::kSmaller;  // zero2/zero3's gradients: blocks and a shard, or the region
  bool read_gradients = false;                       // DpTrained::gradients
};

struct DpTrained {
  std::vector<float> weights;
  std::vector<float> gradients;  // the last step's reduced gradients, parameter after parameter in graph order
  RankPhase phase;
  std::string graph_status;
  size_t reductions = 0;  // per step
};

DpTrained train_dp(const DpSetup& setup, CudaGraphMode mode) {
  auto device = make_cuda_device(0);
  OneRankGroup group;
  std::unique_ptr<Communicator> communicator = make_communicator(Backend::kNccl, group, *device, {});
  const Workload& w = find_workload(setup.workload);
  TrainOptions options;
  options.workload = setup.workload;
  options.scale = WorkloadScale::kTiny;
  options.precision = setup.precision;
  options.optimizer = w.reference_optimizer();
  options.warmup_steps = 1;
  options.steps = 4;  // step 0 eager, step 1 captured, steps 2..4 replays
  options.cuda_graph = mode;
  ReplicaOptions replica_options;
  replica_options.workload = setup.workload;
  replica_options.scale = WorkloadScale::kTiny;
  replica_options.batch = std::max<int64_t>(2, w.info().min_batch);
  replica_options.precision = setup.precision;
  replica_options.bucket_bytes = kSmallBuckets;
  replica_options.optimizer_state_buffers = optimizer_state_buffers(options.optimizer.kind);
  replica_options.arena_memory = registrable_arena(*communicator, *device, setup.registration);
  replica_options.embedding_grad = setup.embedding;  // one rank: split only where sparse is asked for
  replica_options.strategy = setup.strategy;  // zero2: the buckets laid out in chunks
  replica_options.gradient_layout = setup.layout;
  std::unique_ptr<Replica> replica = build_replica(replica_options, *device, options.seed, 0, 1001);
  weight_losses_by_global_rows(group, *replica, true);
  options.overlap_ctas = setup.overlap_ctas;
  std::string not_applied;
  std::unique_ptr<Communicator> during_backward =
      make_overlap_communicator(options, *communicator, group, *device, &not_applied);
  EXPECT_EQ(during_backward != nullptr, setup.overlap_ctas > 0) << not_applied;
  GradientReducer reducer(*device, *communicator, *replica->executor, setup.wire, setup.overlap, false, nullptr,
                          setup.embedding, during_backward.get(), setup.registration, setup.strategy);
  // A symmetric window where NCCL has symmetric memory for this communicator, else local registration and why.
  const TrainingReport::GradRegistration& granted = reducer.registration();
  if (setup.registration == BufferRegistration::kNone || granted.granted == setup.registration) {
    EXPECT_EQ(granted.granted, setup.registration);
    EXPECT_EQ(granted.why_less, "");
  } else {
    EXPECT_EQ(setup.registration, BufferRegistration::kSymmetric);
    EXPECT_EQ(granted.granted, BufferRegistration::kLocal);
    EXPECT_NE(granted.why_less, "");
    std::printf("[ note     ] symmetric window not granted: %s\n", granted.why_less.c_str());
  }
  EXPECT_EQ(reducer.embedding_grad().sparse, setup.embedding == EmbeddingGradMode::kSparse ||
                                                 (setup.embedding == EmbeddingGradMode::kAuto &&
                                                  reducer.embedding_grad().dense_because.empty() &&
                                                  reducer.embedding_grad().tables > 0));
  StepGraph graph(group, *replica->executor, mode, "dp", std::nullopt);
  DpTrained out;
  out.phase = run_dp_phase(group, *replica, reducer, options, graph);
  out.weights = read_parameters(*replica);
  // Where the optimizer read them: the arena's gradient region, or with gradient blocks the gradient shard.
  const std::vector<int64_t> first = parameter_flat_elements(replica->graph, replica->plan);
  for (TensorId p : replica->graph.tensors_with_role(TensorRole::kParameter)) {
    if (!setup.read_gradients) break;
    const auto count = replica->graph.tensor(p).elements();
    const size_t at = out.gradients.size();
    out.gradients.resize(at + static_cast<size_t>(count));
    const float* gradients = replica->executor->gradients_of(first[static_cast<size_t>(p)], count);
    device->copy_to_host(out.gradients.data() + at, gradients, static_cast<size_t>(count) * sizeof(float),
                         replica->executor->compute_stream());
  }
  out.graph_status = graph.status();
  out.reductions = reducer.bucket_count();
  return out;
}

// The replayed steps' timeline, from the events recorded inside the graph, is a timeline: each bucket ready
// before its all-reduce starts, ending before the step does, one entry per reduction and timed step.
void expect_timeline(const DpTrained& replayed, const std::string& name) {
  const RankPhase& p = replayed.phase;
  ASSERT_EQ(p.step_ms.size(), 4u) << name;
  ASSERT_EQ(p.bucket_ready_ms.size(), p.step_ms.size()) << name;
  constexpr double kSlack = 1e-3;  // event timestamps are 0.5 us apart at best
  for (size_t s = 0; s < p.step_ms.size(); ++s) {
    EXPECT_GT(p.step_ms[s], 0.0) << name << " step " << s;
    EXPECT_LE(p.forward_done_ms[s], p.nodes_done_ms[s] + kSlack) << name << " step " << s;
    EXPECT_LE(p.nodes_done_ms[s], p.step_done_ms[s] + kSlack) << name << " step " << s;
    ASSERT_EQ(p.bucket_ready_ms[s].size(), replayed.reductions) << name << " step " << s;
    ASSERT_EQ(p.bucket_ms[s].size(), replayed.reductions) << name << " step " << s;
    for (size_t b = 0; b < replayed.reductions; ++b) {
      EXPECT_LE(p.bucket_ready_ms[s][b], p.bucket_start_ms[s][b] + kSlack) << name << " step " << s << " bucket " << b;
      EXPECT_LE(p.bucket_start_ms[s][b], p.bucket_end_ms[s][b] + kSlack) << name << " step " << s << " bucket " << b;
      EXPECT_LE(p.bucket_end_ms[s][b], p.step_done_ms[s] + kSlack) << name << " step " << s << " bucket " << b;
      EXPECT_GE(p.bucket_ms[s][b], 0.0) << name << " step " << s << " bucket " << b;
    }
  }
}

void expect_replay_trains_as_eager(const DpSetup& setup) {
  const std::string& name = setup.workload;
  const DpTrained eager = train_dp(setup, CudaGraphMode::kOff);
  const DpTrained replayed = train_dp(setup, CudaGraphMode::kOn);
  ASSERT_EQ(replayed.graph_status, "on") << name;
  ASSERT_EQ(eager.graph_status, "off (--cuda-graph off)") << name;
  expect_timeline(replayed, name);
  const double difference = largest_difference(eager.weights, replayed.weights);
  if (difference == 0) {
    EXPECT_EQ(replayed.phase.loss_last, eager.phase.loss_last) << name;
    return;
  }
  // Atomics make eager runs differ already; the replay is one more such run (a factor of 4 of slack).
  const DpTrained again = train_dp(setup, CudaGraphMode::kOff);
  const double spread = largest_difference(eager.weights, again.weights);
  EXPECT_GT(spread, 0.0) << name << ": eager dp runs agree bit for bit, the replay differs by " << difference;
  EXPECT_LE(difference, 4 * spread) << name << ": eager dp runs differ by " << spread;
}

class DpStepGraph : public ::testing::TestWithParam<const Workload*> {};

TEST_P(DpStepGraph, ReplayedDpStepsTrainAsEagerOnes) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  expect_replay_trains_as_eager({GetParam()->info().name});
}

INSTANTIATE_TEST_SUITE_P(EveryWorkload, DpStepGraph, ::testing::ValuesIn(workload_registry()),
                         [](const ::testing::TestParamInfo<const Workload*>& info) {
                           return info.param->info().name;
                         });

TEST(DpStepGraphVariants, SeveralBucketsPerStep) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // The point of small buckets: the all-reduces of a step are several graph branches, not one.
  EXPECT_GE(train_dp({"bert_base"}, CudaGraphMode::kOn).reductions, 3u);
}

TEST(DpStepGraphVariants, WithoutOverlap) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  expect_replay_trains_as_eager({"bert_base", Precision::kBf16, false});
}

TEST(DpStepGraphVariants, Bf16Wire) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  expect_replay_trains_as_eager({"bert_base", Precision::kBf16, true, DType::kBFloat16});
}

TEST(DpStepGraphVariants, Fp16LossScaling) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  expect_replay_trains_as_eager({"transformer_big", Precision::kFp16});
}

TEST(DpStepGraphVariants, TiedTableRowsApartAndTogether) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // The rows' two reductions and the compute stream's waits for them, captured; and the dense table alone.
  const DpSetup sparse{"transformer_big", Precision::kBf16, true, DType::kFloat32, EmbeddingGradMode::kSparse};
  EXPECT_EQ(train_dp(sparse, CudaGraphMode::kOn).reductions,
            train_dp({"transformer_big"}, CudaGraphMode::kOff).reductions + 2)
      << "auto on one rank keeps the table whole (nothing to reduce): the flags and rows are sparse's alone";
  expect_replay_trains_as_eager(sparse);
  expect_replay_trains_as_eager({"transformer_big", Precision::kBf16, true, DType::kFloat32, EmbeddingGradMode::kDense});
}

TEST(DpStepGraphVariants, AllReducesDuringTheBackwardPassOnTwoCtas) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // Two NCCL communicators on the one communication stream, the first limited by ncclConfig_t.maxCTAs.
  expect_replay_trains_as_eager({"bert_base", Precision::kBf16, true, DType::kFloat32, EmbeddingGradMode::kAuto, 2});
}

TEST(DpStepGraphVariants, GradientBuffersRegisteredWithNccl) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // --grad-registration: the arena from ncclMemAlloc, the gradient region (fp32 wire) or the wire buffers (bf16)
  // in a symmetric window or registered locally, captured and replayed; and with the second communicator's too.
  DpSetup symmetric{"bert_base"};
  symmetric.registration = BufferRegistration::kSymmetric;
  expect_replay_trains_as_eager(symmetric);
  DpSetup local{"transformer_big", Precision::kBf16, true, DType::kBFloat16, EmbeddingGradMode::kSparse, 2};
  local.registration = BufferRegistration::kLocal;
  expect_replay_trains_as_eager(local);
  DpSetup both{"transformer_big", Precision::kBf16, true, DType::kFloat32, EmbeddingGradMode::kAuto, 4};
  both.registration = BufferRegistration::kSymmetric;
  expect_replay_trains_as_eager(both);
}

TEST(DpStepGraphVariants, Zero1UpdateAndAllGatherCaptured) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // --strategy zero1 on one rank: the shard is every parameter, but the sharded update and the in-place all-gather
  // on the communication stream (and the compute stream's wait for it) are captured and replayed as eagerly run.
  for (const char* workload : {"bert_base", "unsupmt"}) {
    DpSetup zero1{workload};
    zero1.strategy = DataParallelStrategy::kZero1;
    expect_replay_trains_as_eager(zero1);
  }
}

TEST(DpStepGraphVariants, Zero2ReduceScattersAndPerBucketGathersCaptured) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // --strategy zero2 on one rank: every bucket one chunk, but its reduce-scatter, the update by chunks, the
  // all-gather per bucket and (bert_base clips) the fp64 all-reduce of the squared norm on the communication stream
  // are captured and replayed as eagerly run.
  for (const char* workload : {"bert_base", "unsupmt"}) {
    DpSetup zero2{workload};
    zero2.strategy = DataParallelStrategy::kZero2;
    expect_replay_trains_as_eager(zero2);
  }
}

DpSetup in_blocks(const char* workload, DataParallelStrategy strategy) {
  DpSetup setup{workload};
  setup.strategy = strategy;
  setup.layout = GradientLayout::kBlocks;
  return setup;
}

TEST(DpStepGraphVariants, GradientBlocksCaptured) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // zero2 and zero3 with the gradients in blocks (the CUDA path of DESIGN.md's "gradients at 1/N"): each block's gaps
  // zeroed (cuda::zero_byte_ranges) before its first writer, each bucket reduce-scattered out of its block into the
  // gradient shard, the compute stream waiting for it before the block's bytes are reused, the optimizer and the norm
  // over the shard; zero3's parameters in blocks too ("the parameters at 1/N": the weights in the parameter shard, each
  // unit gathered out of it into its forward and backward blocks, the backward pass casting its own bf16 copies);
  // captured and replayed as eagerly run, on an fp32 and a bf16 wire; and the weights those of the regions whole (one
  // rank's reduce-scatter and all-gather are copies: the same arithmetic), bit for bit or within eager runs' spread.
  for (DataParallelStrategy strategy : {DataParallelStrategy::kZero2, DataParallelStrategy::kZero3}) {
    for (const char* workload : {"bert_base", "unsupmt"}) {
      DpSetup blocks = in_blocks(workload, strategy);
      expect_replay_trains_as_eager(blocks);
      if (strategy == DataParallelStrategy::kZero3) {
        ReplicaOptions planned;
        planned.workload = workload;
        planned.scale = WorkloadScale::kTiny;
        planned.batch = std::max<int64_t>(2, find_workload(workload).info().min_batch);
        planned.precision = blocks.precision;
        planned.bucket_bytes = kSmallBuckets;
        planned.strategy = strategy;
        planned.gradient_layout = GradientLayout::kBlocks;
        EXPECT_TRUE(plan_replica(planned)->plan.parameters_in_blocks) << workload;
      }
      DpSetup whole = blocks;
      whole.layout = GradientLayout::kWhole;
      const std::vector<float> in_blocks = train_dp(blocks, CudaGraphMode::kOff).weights;
      const double difference = largest_difference(in_blocks, train_dp(whole, CudaGraphMode::kOff).weights);
      if (difference > 0) {
        const double spread = largest_difference(train_dp(whole, CudaGraphMode::kOff).weights,
                                                 train_dp(whole, CudaGraphMode::kOff).weights);
        EXPECT_LE(difference, 4 * spread) << workload << " " << strategy_name(strategy) << ": eager runs differ by "
                                          << spread;
      }
    }
  }
  DpSetup bf16{"bert_base", Precision::kBf16, true, DType::kBFloat16};
  bf16.strategy = DataParallelStrategy::kZero2;
  bf16.layout = GradientLayout::kBlocks;
  expect_replay_trains_as_eager(bf16);
}

// Where GradientBlocksCaptured's weights differ (PERFORMANCE.md, 2026-12-05, fourth session): the reduced gradients
// of the last eager step, blocks against the region whole. Rounding (a GEMM or a sum in another order) stays within 1e-3 of
// the largest gradient; a block read after its bytes were reused, or a gap not zeroed, would not.
TEST(DpStepGraphVariants, GradientBlocksReduceTheRegionsGradients) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (DataParallelStrategy strategy : {DataParallelStrategy::kZero2, DataParallelStrategy::kZero3}) {
    for (const char* workload : {"bert_base", "unsupmt"}) {
      DpSetup blocks = in_blocks(workload, strategy);
      blocks.read_gradients = true;
      DpSetup whole = blocks;
      whole.layout = GradientLayout::kWhole;
      const std::vector<float> in_blocks = train_dp(blocks, CudaGraphMode::kOff).gradients;
      const std::vector<float> in_region = train_dp(whole, CudaGraphMode::kOff).gradients;
      ASSERT_EQ(in_blocks.size(), in_region.size());
      double largest = 0, difference = 0;
      size_t differ = 0, at = 0;
      for (size_t i = 0; i < in_region.size(); ++i) {
        largest = std::max(largest, std::fabs(static_cast<double>(in_region[i])));
        const double d = std::fabs(static_cast<double>(in_blocks[i]) - in_region[i]);
        differ += d > 0;
        if (d > difference) difference = d, at = i;
      }
      std::printf("[ note     ] %s %s: %zu of %zu gradients differ, the most by %.3g at element %zu "
                  "(largest |g| %.3g)\n",
                  workload, strategy_name(strategy), differ, in_region.size(), difference, at, largest);
      EXPECT_GT(largest, 0) << workload << " " << strategy_name(strategy) << ": no gradient was read";
      EXPECT_LE(difference, 1e-3 * largest) << workload << " " << strategy_name(strategy) << " element " << at;
    }
  }
}

TEST(DpStepGraphVariants, Zero3GathersBeforeUseCaptured) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // --strategy zero3 on one rank: every bucket one chunk, but each unit's all-gather issued one unit ahead on the
  // communication stream and waited for by the compute stream before the forward and the backward pass use it
  // (unsupmt: before its generation parts too), no gather after the update, captured and replayed as eagerly run;
  // every gather timed, with the point where the compute stream needed it.
  for (const char* workload : {"bert_base", "unsupmt"}) {
    DpSetup zero3{workload};
    zero3.strategy = DataParallelStrategy::kZero3;
    expect_replay_trains_as_eager(zero3);
    const RankPhase phase = train_dp(zero3, CudaGraphMode::kOn).phase;
    ASSERT_EQ(phase.gather_needed_ms.size(), phase.step_ms.size()) << workload;
    for (size_t s = 0; s < phase.step_ms.size(); ++s) {
      ASSERT_EQ(phase.gather_needed_ms[s].size(), phase.gather_end_ms[s].size()) << workload << " step " << s;
      EXPECT_FALSE(phase.gather_end_ms[s].empty()) << workload << " step " << s;
      for (size_t g = 0; g < phase.gather_end_ms[s].size(); ++g) {
        EXPECT_LE(phase.gather_start_ms[s][g], phase.gather_end_ms[s][g] + 1e-3) << workload << " gather " << g;
        EXPECT_LE(phase.gather_end_ms[s][g], phase.step_done_ms[s] + 1e-3) << workload << " gather " << g;
      }
    }
  }
}

}  // namespace
}  // namespace sb
