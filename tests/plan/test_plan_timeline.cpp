// The step timeline of scalebench plan: every case small enough to check by hand (include/scalebench/plan_model.h).
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {
namespace {

// Nodes of 1 and 2 ms; one bucket ready after node 0 whose all-reduce takes `comm` ms alone; 0.5 ms update.
TimelineInput one_bucket(double comm) {
  TimelineInput in;
  in.node_ms = {1, 2};
  in.bucket_ready_node = {0};
  in.bucket_comm_ms = {comm};
  in.bucket_update_ms = {0.5};
  in.whole_update_ms = 0.5;
  return in;
}

// Two sub-steps of one pass each (3 ms solo, 4 ms data-parallel), parts of 1 and 2.5 ms (2 of them generation).
TEST(PlanTimeline, SubStepsAddTheirPartsAndOnePassEach) {
  TimelineResult pass;
  pass.forward_ms = 1, pass.backward_ms = 1.5, pass.optimizer_ms = 0.5, pass.solo_ms = 3, pass.step_ms = 4;
  pass.comm_alone_ms = 2, pass.nodes_done_ms = 2.5, pass.last_reduce_end_ms = 3.5;
  const TimelineResult r = sub_step_timeline(pass, {1, 2.5}, {0, 2});
  EXPECT_EQ(r.sub_steps, 2);
  EXPECT_DOUBLE_EQ(r.parts_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.generation_ms, 2);
  EXPECT_DOUBLE_EQ(r.solo_ms, 3.5 + 2 * 3);
  EXPECT_DOUBLE_EQ(r.step_ms, 3.5 + 2 * 4);
  EXPECT_DOUBLE_EQ(r.forward_ms, 2);
  EXPECT_DOUBLE_EQ(r.comm_alone_ms, 4);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 11.5 - 4 + 2.5);  // the last sub-step's pass starts 4 ms before the end
  EXPECT_THROW(sub_step_timeline(pass, {}, {}), UsageError);
}

TEST(PlanTimeline, WithoutBucketsTheStepIsTheSoloStep) {
  TimelineInput in;
  in.node_ms = {1, 2, 3};
  in.whole_update_ms = 0.25;
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.solo_ms, 6.25);
  EXPECT_DOUBLE_EQ(r.step_ms, 6.25);
  EXPECT_DOUBLE_EQ(r.forward_ms, 1);
  EXPECT_DOUBLE_EQ(r.backward_ms, 5);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 6);
}

TEST(PlanTimeline, AHiddenAllReduceCostsNothing) {
  const TimelineResult r = simulate_step(one_bucket(1), 1);
  EXPECT_DOUBLE_EQ(r.bucket_start_ms[0], 1);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[0], 2);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 3);
  EXPECT_DOUBLE_EQ(r.step_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.step_ms, r.solo_ms);
}

TEST(PlanTimeline, TheUpdateWaitsForItsBucket) {
  // comm 1 → 4 while the nodes end at 3: the update starts at 4.
  const TimelineResult r = simulate_step(one_bucket(3), 1);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 3);
  EXPECT_DOUBLE_EQ(r.last_reduce_end_ms, 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 4.5);
  EXPECT_DOUBLE_EQ(r.comm_alone_ms, 3);
}

// Gradient blocks: node 1 reuses the bucket's block, so it waits for the reduction (1 → 4) before it runs (4 → 6);
// a wait at or past the last node, or none, leaves the step as it was.
TEST(PlanTimeline, ANodeReusingABlockWaitsForItsReduction) {
  TimelineInput in = one_bucket(3);
  in.bucket_needed_node = {1};
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.last_reduce_end_ms, 4);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 6);
  EXPECT_DOUBLE_EQ(r.step_ms, 6.5);
  in.bucket_needed_node = {2};
  EXPECT_DOUBLE_EQ(simulate_step(in, 1).step_ms, 4.5);
  in.bucket_needed_node = {0, 1};
  EXPECT_THROW(simulate_step(in, 1), UsageError);
}

TEST(PlanTimeline, DilationSlowsComputeWhileTheAllReduceRuns) {
  TimelineInput in = one_bucket(1);
  in.dilation = 1;  // half speed while comm runs
  // [1, 2]: comm alone-time 1 done; node 1 gets 0.5 ms of its 2; then 1.5 ms at full speed → nodes done 3.5.
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[0], 2);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.step_ms, 4);
}

TEST(PlanTimeline, TheAllReduceRunsSlowerBesideComputeAndAtFullRateAfter) {
  TimelineInput in = one_bucket(2);
  in.in_training_rate = 0.5;
  // [1, 3]: half rate beside node 1 → 1 ms of 2 done; after the nodes, full rate → ends at 4; update → 4.5.
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 3);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[0], 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 4.5);
}

TEST(PlanTimeline, BucketsGoFirstInFirstOutOnOneStream) {
  TimelineInput in;
  in.node_ms = {1, 5};
  in.bucket_ready_node = {0, 0};
  in.bucket_comm_ms = {1, 2};
  in.bucket_update_ms = {0.5, 0.5};
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.bucket_start_ms[1], 2);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[1], 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 7);  // nodes end at 6, both updates after
}

TEST(PlanTimeline, WithoutOverlapEveryBucketWaitsForTheLastNode) {
  TimelineInput in = one_bucket(1);
  in.overlap = false;
  in.update_by_bucket = false;
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.bucket_start_ms[0], 3);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[0], 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 4.5);
}

TEST(PlanTimeline, OneUpdatePassWaitsForTheLastBucket) {
  TimelineInput in;
  in.node_ms = {1, 1, 1};
  in.bucket_ready_node = {0, 2};
  in.bucket_comm_ms = {0.5, 1};
  in.bucket_update_ms = {0.1, 0.1};
  in.whole_update_ms = 0.3;
  in.update_by_bucket = false;
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[1], 4);
  EXPECT_DOUBLE_EQ(r.step_ms, 4.3);
  // Updated by bucket, the first bucket's update runs while the second is reduced: 3 + 0.1, then 4 + 0.1.
  in.update_by_bucket = true;
  EXPECT_DOUBLE_EQ(simulate_step(in, 1).step_ms, 4.1);
}

// A sharded strategy's gathers run on the communication stream after the reductions, each once its update is
// done; the step ends with the last of them. One bucket ready after node 0, reduced in 1 ms (ends at 2), nodes done
// at 3, its update 0.5 ms (3 to 3.5), the gather 2 ms (3.5 to 5.5).
TEST(PlanTimeline, GathersFollowTheirUpdateAndEndTheStep) {
  TimelineInput in = one_bucket(1);
  in.gather_ms = {2};
  in.gather_after_update = {0};
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.last_reduce_end_ms, 2);
  EXPECT_DOUBLE_EQ(r.last_gather_end_ms, 5.5);
  EXPECT_DOUBLE_EQ(r.step_ms, 5.5);
  EXPECT_DOUBLE_EQ(r.gathers_alone_ms, 2);
  EXPECT_DOUBLE_EQ(r.comm_alone_ms, 3) << "the comm phase reduces and gathers";
  EXPECT_DOUBLE_EQ(r.solo_ms, 3.5) << "solo gathers nothing";
  // The shard's update in one pass (a quarter of the parameters) instead of the whole: 3 + 0.125, then the gather.
  in.update_by_bucket = false;
  in.dp_whole_update_ms = 0.125;
  const TimelineResult whole = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(whole.step_ms, 3.125 + 2);
  EXPECT_DOUBLE_EQ(whole.solo_ms, 3.5) << "solo updates every parameter";
  in.gather_after_update = {};
  EXPECT_THROW(simulate_step(in, 1), UsageError);
}

// Two buckets, each gathered after its own update: the first gather runs beside the second update.
TEST(PlanTimeline, PerBucketGathersOverlapTheNextUpdate) {
  TimelineInput in;
  in.node_ms = {1, 1};
  in.bucket_ready_node = {0, 1};
  in.bucket_comm_ms = {0.5, 0.5};  // 1-1.5, 2-2.5
  in.bucket_update_ms = {1, 1};    // 2-3 (after the nodes), 3-4
  in.gather_ms = {1, 1};           // after update 0: 3-4; after update 1: 4-5
  in.gather_after_update = {0, 1};
  const TimelineResult r = simulate_step(in, 1);
  EXPECT_DOUBLE_EQ(r.step_ms, 5);
  EXPECT_DOUBLE_EQ(r.last_gather_end_ms, 5);
}

// zero3: gathers before use, one unit ahead, merged with the reductions in issue order. Nodes of 1 ms (0 and 1
// forward, 2 and 3 backward); gather 0 (issued at the start) for node 0, gather 1 (issued at node 0) for node 1,
// gather 2 (issued at node 1) for node 3, 1 ms each; buckets ready after nodes 2 and 3, 0.5 ms each; updates 0.25.
// Gathers 0-1, 1-2, 2-3; node 0 1-2, node 1 2-3 (each waited for its gather), node 2 3-4, node 3 4-5 (its gather was
// done at 3); reductions 4-4.5 and 5-5.5; updates 5-5.25 and 5.5-5.75.
TEST(PlanTimeline, Zero3NodesWaitForTheirUnitsGatheredOneAhead) {
  TimelineInput in;
  in.node_ms = {1, 1, 1, 1};
  in.bucket_ready_node = {2, 3};
  in.bucket_comm_ms = {0.5, 0.5};
  in.bucket_update_ms = {0.25, 0.25};
  in.whole_update_ms = 0.5;
  in.gather_ms = {1, 1, 1};
  in.gather_issue_node = {-1, 0, 1};
  in.gather_needed_node = {0, 1, 3};
  const TimelineResult r = simulate_step(in, 2);
  EXPECT_DOUBLE_EQ(r.last_gather_end_ms, 3);
  EXPECT_DOUBLE_EQ(r.bucket_start_ms[0], 4);
  EXPECT_DOUBLE_EQ(r.bucket_end_ms[1], 5.5);
  EXPECT_DOUBLE_EQ(r.nodes_done_ms, 5);
  EXPECT_DOUBLE_EQ(r.step_ms, 5.75);
  EXPECT_DOUBLE_EQ(r.solo_ms, 4.5) << "solo gathers nothing";
  EXPECT_DOUBLE_EQ(r.gathers_alone_ms, 3);
  // A gather issued behind a reduction waits for it: gather 2 issued at node 3 (after bucket 0's reduction, issued
  // after node 2) runs 4.5-5.5, so node 3 waits until 5.5; its reduction 6.5-7, updates 6.5-6.75 and 7-7.25.
  in.gather_issue_node = {-1, 0, 3};
  const TimelineResult behind = simulate_step(in, 2);
  EXPECT_DOUBLE_EQ(behind.last_gather_end_ms, 5.5);
  EXPECT_DOUBLE_EQ(behind.nodes_done_ms, 6.5);
  EXPECT_DOUBLE_EQ(behind.step_ms, 7.25);
  in.gather_needed_node = {0, 1};
  EXPECT_THROW(simulate_step(in, 2), UsageError);
}

}  // namespace
}  // namespace sb
