// StepGraph (src/train/step_graph.h), the policy that turns a phase's steps into replays of one captured graph:
// which steps run eagerly, which one is captured, that the rest replay, and every way it falls back. The
// executor here records the calls a CUDA executor would turn into a capture and launches.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "src/train/step_graph.h"
#include "tests/unit/one_rank_group.h"

namespace sb {
namespace {

// The empty graph and plan the recording executor hands its base: a base class of their own, listed first, so they
// are built before Executor's constructor reads the graph (members would be built after it).
struct EmptyModel {
  Graph graph_storage_;
  MemoryPlan plan_storage_;
};

// What the step graph asked of the executor, in order: "eager" (a step's work enqueued outside a capture),
// "captured" (enqueued while capturing), "begin", "end", "abort", "replay".
class RecordingExecutor final : private EmptyModel, public Executor {
 public:
  explicit RecordingExecutor(std::optional<std::string> cannot = std::nullopt)
      : Executor(graph_storage_, plan_storage_), cannot_(std::move(cannot)) {}

  std::optional<std::string> why_no_step_graph() const override { return cannot_; }
  void begin_step_capture() override {
    capturing = true;
    calls.push_back("begin");
  }
  std::optional<std::string> end_step_capture() override {
    capturing = false;
    calls.push_back("end");
    return end_failure;
  }
  void abort_step_capture() override {
    capturing = false;
    calls.push_back("abort");
  }
  void replay_step() override { calls.push_back("replay"); }

  // The step's work: what the trainer's enqueue_step would do.
  void enqueue() {
    calls.push_back(capturing ? "captured" : "eager");
    if (capturing && throw_in_capture) {
      throw RuntimeFailure("cudaStreamSynchronize: operation not permitted when stream is capturing");
    }
  }

  void write_tensor(TensorId, const void*, size_t) override {}
  void read_tensor(TensorId, void*, size_t) override {}
  void run_nodes(size_t, size_t) override {}
  void optimizer_step(const OptimizerSettings&, int64_t) override {}
  void optimizer_step_range(const OptimizerSettings&, int64_t, int64_t, int64_t) override {}
  void reset_optimizer_state() override {}
  StreamHandle compute_stream() const override { return nullptr; }
  void* arena_data() override { return nullptr; }
  void mark(size_t) override {}
  double elapsed_ms(size_t, size_t) override { return 0; }

  std::vector<std::string> calls;
  bool capturing = false;
  bool throw_in_capture = false;
  std::optional<std::string> end_failure;

 private:
  std::optional<std::string> cannot_;
  void allocate_gradient_shard(int64_t) override {}  // its plan has no gradient blocks
  float* gradient_shard_data() override { return nullptr; }
  void copy_device_bytes(void*, const void*, uint64_t) override {}
  void zero_block_gaps(size_t) override {}
  void allocate_parameter_shard(int64_t) override {}  // nor parameter blocks
  float* parameter_shard_data() override { return nullptr; }
  void copy_from_host(void*, const void*, uint64_t) override {}
  void copy_to_host(void*, const void*, uint64_t) override {}
};

// Runs `steps` steps as run_steps does: the random stream set to (seed, index), then the step issued.
void run(StepGraph& graph, RecordingExecutor& executor, int steps, uint64_t seed = 7) {
  for (int index = 0; index < steps; ++index) {
    executor.set_random_stream(seed, static_cast<uint64_t>(index));
    graph.issue(index, [&] { executor.enqueue(); });
  }
}

using Calls = std::vector<std::string>;

TEST(StepGraph, FirstStepEagerSecondCapturedAndReplayedTheRestReplayed) {
  OneRankGroup group;
  RecordingExecutor executor;
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  run(graph, executor, 5);
  EXPECT_EQ(executor.calls, (Calls{"eager", "begin", "captured", "end", "replay", "replay", "replay", "replay"}));
  EXPECT_TRUE(graph.replaying());
  EXPECT_EQ(graph.status(), "on");
}

TEST(StepGraph, OffRunsEveryStepEagerly) {
  OneRankGroup group;
  RecordingExecutor executor;
  StepGraph graph(group, executor, CudaGraphMode::kOff, "solo", std::nullopt);
  run(graph, executor, 3);
  EXPECT_EQ(executor.calls, (Calls{"eager", "eager", "eager"}));
  EXPECT_EQ(graph.status(), "off (--cuda-graph off)");
}

TEST(StepGraph, AnExecutorThatCannotCaptureRunsEagerlyAndSaysWhy) {
  OneRankGroup group;
  RecordingExecutor executor("the cpu device runs each node when it is called");
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  run(graph, executor, 3);
  EXPECT_EQ(executor.calls, (Calls{"eager", "eager", "eager"}));
  EXPECT_EQ(graph.status(), "off (the cpu device runs each node when it is called)");
}

TEST(StepGraph, APhaseReasonWinsOverACapableExecutor) {
  OneRankGroup group;
  RecordingExecutor executor;
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "dp", std::string("the mpi backend's all-reduces cannot be captured"));
  run(graph, executor, 3);
  EXPECT_EQ(executor.calls, (Calls{"eager", "eager", "eager"}));
  EXPECT_EQ(graph.status(), "off (the mpi backend's all-reduces cannot be captured)");
}

TEST(StepGraph, OnIsAnErrorWhereThePhaseCannotCapture) {
  OneRankGroup group;
  RecordingExecutor executor("the cpu device runs each node when it is called");
  try {
    StepGraph graph(group, executor, CudaGraphMode::kOn, "solo", std::nullopt);
    FAIL() << "expected RuntimeFailure";
  } catch (const RuntimeFailure& e) {
    EXPECT_STREQ(e.what(), "--cuda-graph on: the solo phase cannot run as a graph: the cpu device runs each node "
                           "when it is called");
  }
}

TEST(StepGraph, AFailedCaptureRunsThatStepEagerlyAndEveryLaterOne) {
  OneRankGroup group;
  RecordingExecutor executor;
  executor.end_failure = "capturing the step failed: operation not permitted when stream is capturing";
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  run(graph, executor, 4);
  EXPECT_EQ(executor.calls, (Calls{"eager", "begin", "captured", "end", "eager", "eager", "eager"}));
  EXPECT_EQ(graph.status(), "off (capturing the step failed: operation not permitted when stream is capturing)");
}

TEST(StepGraph, AThrowInsideTheCaptureIsAbortedAndTheStepRetriedFromItsRandomStream) {
  OneRankGroup group;
  RecordingExecutor executor;
  executor.throw_in_capture = true;
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  executor.set_random_stream(7, 0);
  graph.issue(0, [&] { executor.enqueue(); });
  executor.set_random_stream(7, 1);
  std::vector<uint64_t> streams_at_start;  // the random stream each attempt at step 1 starts from
  graph.issue(1, [&] {
    streams_at_start.push_back(executor.step());
    executor.set_random_stream(7, 99);  // as a sub-step would, before the capture fails halfway
    executor.enqueue();
  });
  EXPECT_EQ(executor.calls, (Calls{"eager", "begin", "captured", "abort", "eager"}));
  EXPECT_EQ(streams_at_start, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(graph.status().rfind("off (capturing the step failed: cudaStreamSynchronize", 0), 0u) << graph.status();
}

TEST(StepGraph, OnMakesAFailedCaptureAnError) {
  OneRankGroup group;
  RecordingExecutor executor;
  executor.end_failure = "capturing the step failed: invalid";
  StepGraph graph(group, executor, CudaGraphMode::kOn, "dp", std::nullopt);
  executor.set_random_stream(7, 0);
  graph.issue(0, [&] { executor.enqueue(); });
  executor.set_random_stream(7, 1);
  EXPECT_THROW(graph.issue(1, [&] { executor.enqueue(); }), RuntimeFailure);
}

TEST(StepGraph, AReplayMustFollowTheCapturedStepInOrder) {
  OneRankGroup group;
  RecordingExecutor executor;
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  run(graph, executor, 3);
  executor.set_random_stream(7, 10);  // not step 3's stream: the graph would compute step 3's values
  EXPECT_THROW(graph.issue(3, [&] { executor.enqueue(); }), RuntimeFailure);
  executor.set_random_stream(8, 3);  // another seed
  EXPECT_THROW(graph.issue(3, [&] { executor.enqueue(); }), RuntimeFailure);
}

TEST(StepGraph, APhaseOfOneStepNeverReachesTheCapture) {
  OneRankGroup group;
  RecordingExecutor executor;
  StepGraph graph(group, executor, CudaGraphMode::kAuto, "solo", std::nullopt);
  run(graph, executor, 1);
  EXPECT_EQ(executor.calls, (Calls{"eager"}));
  EXPECT_EQ(graph.status().rfind("off (the phase ended before its second step", 0), 0u) << graph.status();
}

}  // namespace
}  // namespace sb
