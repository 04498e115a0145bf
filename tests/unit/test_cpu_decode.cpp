// sb::cpu greedy-decoding ops (src/cpu/decode.h) against hand-computed values, and the engine around them: the
// graph builder's shape checks, the no-gradient rules, a decode loop on the CPU executor whose step counter
// lives in the graph, and the planner's rule that a repeated part's tensors live for the whole repetition.
// These ops have no gradient (generation runs without one), so there is no finite-difference check: autodiff
// refusing to differentiate through them is checked instead.
// Run: unit_tests --gtest_filter='CpuDecode*:EngineDecode*'.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/executor.h"
#include "scalebench/graph_builder.h"
#include "scalebench/planner.h"
#include "src/cpu/decode.h"

namespace sb {
namespace {

TEST(CpuDecode, ArgmaxTakesTheFirstLargestAndNanFirst) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.5f, 2.0f, -1.0f, 2.0f,    // tie: the first 2.0 (column 1)
                                -3.0f, -2.0f, -5.0f, -2.5f,  // all negative: column 1
                                1.0f, 0.0f, nan, 9.0f,       // NaN counts as the largest
                                7.0f, 7.0f, 7.0f, 7.0f};     // all equal: column 0
  std::vector<int32_t> out(4, -7);
  cpu::argmax_rows(x.data(), out.data(), 4, 4);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, 2, 0}));
  EXPECT_THROW(cpu::argmax_rows(x.data(), out.data(), 1, 0), UsageError);
}

TEST(CpuDecode, WriteAtCounterWritesOneTimeRowOfEveryBlock) {
  // dst (outer 2, time 3, inner 2), src (2, 2), counter 1, offset 1: time row 2 of each block.
  std::vector<float> dst(12, -1.0f);
  const std::vector<float> src = {1.0f, 2.0f, 3.0f, 4.0f};
  const int32_t counter = 1;
  cpu::write_at_counter(src.data(), dst.data(), &counter, 2, 3, 2, sizeof(float), 1);
  EXPECT_EQ(dst, (std::vector<float>{-1, -1, -1, -1, 1, 2, -1, -1, -1, -1, 3, 4}));
  const int32_t past = 2;  // time 3: outside the buffer, nothing written
  cpu::write_at_counter(src.data(), dst.data(), &past, 2, 3, 2, sizeof(float), 1);
  EXPECT_EQ(dst, (std::vector<float>{-1, -1, -1, -1, 1, 2, -1, -1, -1, -1, 3, 4}));
  std::vector<int32_t> ids(6, 0);  // (rows 2, time 3) ids, inner 1, 4-byte int32
  const std::vector<int32_t> tokens = {7, 9};
  const int32_t zero = 0;
  cpu::write_at_counter(tokens.data(), ids.data(), &zero, 2, 3, 1, sizeof(int32_t), 0);
  EXPECT_EQ(ids, (std::vector<int32_t>{7, 0, 0, 9, 0, 0}));
}

TEST(CpuDecode, CounterFillsAndUpdates) {
  int32_t counter = 4;
  std::vector<int32_t> out(3, 0);
  cpu::fill_from_counter(&counter, out.data(), 3, 1);
  EXPECT_EQ(out, (std::vector<int32_t>{5, 5, 5}));
  cpu::update_counter(&counter, 1, 1);
  EXPECT_EQ(counter, 5);
  cpu::update_counter(&counter, 0, 0);
  EXPECT_EQ(counter, 0);
}

TEST(CpuDecode, EndSentencesWritesEosThenPad) {
  std::vector<int32_t> ids = {1, 20, 21, 22, 23,  // length 3: eos at 2, pad after
                              1, 30, 31, 32, 33,  // length 5: eos at 4
                              1, 40, 41, 42, 43}; // length 9 clamps to 5
  const std::vector<int32_t> lengths = {3, 5, 9};
  cpu::end_sentences(ids.data(), lengths.data(), 3, 5, 1, 2);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 20, 1, 2, 2, 1, 30, 31, 32, 1, 1, 40, 41, 42, 1}));
}

// A loop of `time` repetitions whose nodes only know the counter: each writes counter + 10 at position counter
// of a buffer, through a fill (an activation inside the loop) and write_at_counter; then argmax of a
// one-hot row built from the buffer. On the CPU executor, with the planner placing everything.
TEST(EngineDecode, LoopBuiltInTheGraphRunsWithItsCounterOnTheDevice) {
  const int64_t time = 5;
  Graph graph;
  GraphBuilder b(graph);
  const TensorId counter = b.buffer("step", {1}, DType::kInt32);
  const TensorId written = b.buffer("written", {1, time}, DType::kInt32);
  const TensorId start = b.input("start", {1, time}, DType::kInt32);
  const size_t prologue_begin = graph.nodes().size();
  b.update_counter(counter, 0, 0);
  b.copy(written, start);
  const size_t loop_begin = graph.nodes().size();
  const TensorId value = b.fill_from_counter(counter, {1}, 10);
  b.write_at_counter(written, value, counter, 0);
  b.update_counter(counter, 1, 1);
  const size_t loop_end = graph.nodes().size();
  const TensorId logits = b.input("logits", {2, 3});
  const TensorId best = b.argmax(logits);
  graph.set_sub_steps({SubStep{"loop", {StepPart{"prologue", prologue_begin, loop_begin, 1, true},
                                        StepPart{"loop", loop_begin, loop_end, time, true}}, 0}});
  EXPECT_EQ(graph.training_begin(), loop_end);
  const MemoryPlan plan = plan_memory(graph);
  for (TensorId id : {counter, written, value}) {  // touched inside the loop: alive across it
    EXPECT_LE(plan.first_use[static_cast<size_t>(id)], static_cast<int>(loop_begin)) << graph.tensor(id).name;
    EXPECT_GE(plan.last_use[static_cast<size_t>(id)], static_cast<int>(loop_end) - 1) << graph.tensor(id).name;
  }
  CpuExecutor e(graph, plan);
  const std::vector<int32_t> zeros(time, -1);
  e.write_tensor(start, zeros.data(), zeros.size() * sizeof(int32_t));
  const std::vector<float> scores = {0.1f, 0.7f, 0.2f, 3.0f, -1.0f, 3.5f};
  e.write_tensor(logits, scores.data(), scores.size() * sizeof(float));
  e.run_nodes(prologue_begin, loop_begin);
  for (int64_t r = 0; r < time; ++r) e.run_nodes(loop_begin, loop_end);
  std::vector<int32_t> got(time);  // read now: after the loop, the planner may give its bytes to `best`
  e.read_tensor(written, got.data(), got.size() * sizeof(int32_t));
  EXPECT_EQ(got, (std::vector<int32_t>{10, 11, 12, 13, 14}));
  e.run_nodes(loop_end, graph.nodes().size());
  int32_t steps = 0, picked[2] = {0, 0};
  e.read_tensor(counter, &steps, sizeof steps);
  EXPECT_EQ(steps, time);
  e.read_tensor(best, picked, sizeof picked);
  EXPECT_EQ(picked[0], 1);
  EXPECT_EQ(picked[1], 2);
}

TEST(EngineDecode, BuilderChecksShapesAndCounters) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId counter = b.buffer("step", {1}, DType::kInt32);
  const TensorId not_counter = b.buffer("two", {2}, DType::kInt32);
  const TensorId cache = b.buffer("cache", {2, 4, 6, 8}, DType::kFloat32);  // (B, H, T, dh)
  EXPECT_THROW(b.write_at_counter(cache, b.input("bad", {2, 1, 33}), counter, 0), UsageError);
  EXPECT_THROW(b.write_at_counter(cache, b.input("k", {2, 1, 32}), not_counter, 0), UsageError);
  EXPECT_NO_THROW(b.write_at_counter(cache, b.input("k2", {2, 1, 32}), counter, 0));
  EXPECT_THROW(b.fill_from_counter(not_counter, {3}, 0), UsageError);
  EXPECT_THROW(b.copy(counter, not_counter), UsageError);
  EXPECT_THROW(b.argmax(counter), UsageError);  // int32 logits
  EXPECT_THROW(b.end_sentences(cache, counter, 1, 2), UsageError);
  EXPECT_THROW(graph.set_sub_steps({SubStep{"s", {StepPart{"p", 0, 99, 1, false}}, 0}}), UsageError);
  b.parameter("w", {3});
  EXPECT_THROW(b.parameter("w", {4}), UsageError);  // the same name with another shape
  EXPECT_EQ(b.parameter("v", {3}), b.parameter("v", {3}));                   // same name: the same parameter
}

// A loss that depends on generated ids through an embedding is fine (ids are data); one that reaches a float
// produced by a no-gradient op would be a mistake: copy has no gradient and autodiff says so.
TEST(EngineDecode, NoGradientThroughGenerationOps) {
  Graph graph;
  GraphBuilder b(graph);
  const TensorId w = b.parameter("w", {3, 3});
  const TensorId staged = b.buffer("staged", {2, 3}, DType::kFloat32);
  b.copy(staged, b.linear(b.input("x", {2, 3}), w));
  const TensorId loss = b.softmax_cross_entropy(staged, b.input("t", {2}, DType::kInt32), 0.0, -1);
  EXPECT_THROW(append_backward(graph, loss), UsageError);
}

}  // namespace
}  // namespace sb
