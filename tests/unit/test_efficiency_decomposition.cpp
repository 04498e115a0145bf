// 1 − E = dilation + tail + skew (src/train/efficiency_decomposition.h) on synthetic timelines that hold each
// term apart, all three together, and timelines whose loss the three do not explain (the residual is reported).
#include <gtest/gtest.h>

#include "src/train/efficiency_decomposition.h"

namespace sb {
namespace {

// Solo: forward 4 ms, backward 6 ms, update 1 ms: an 11 ms step.
StepMarks solo_step() {
  StepMarks s;
  s.forward_done_ms = 4, s.nodes_done_ms = 10, s.step_done_ms = 11, s.step_ms = 11;
  return s;
}

StepMarks dp_step(double forward_done, double nodes_done, double step_done, std::vector<double> start,
                  std::vector<double> end) {
  StepMarks s;
  s.forward_done_ms = forward_done, s.nodes_done_ms = nodes_done, s.step_done_ms = step_done, s.step_ms = step_done;
  s.bucket_start_ms = std::move(start);
  s.bucket_end_ms = std::move(end);
  return s;
}

std::vector<RankTimelines> ranks_of(const std::vector<StepMarks>& dp_by_rank, int steps = 3) {
  std::vector<RankTimelines> ranks;
  for (const StepMarks& dp : dp_by_rank) {
    RankTimelines rank;
    rank.solo.assign(size_t(steps), solo_step());
    rank.dp.assign(size_t(steps), dp);
    ranks.push_back(rank);
  }
  return ranks;
}

// E as summarize_scaling measures it: solo step / dp step (every rank's batch alike).
double efficiency(double solo_ms, double dp_ms) { return solo_ms / dp_ms; }

TEST(EfficiencyDecomposition, OnlyDilation) {
  // The backward pass takes 7.1 ms beside the all-reduces (6 alone), which end inside it, as long on both ranks.
  const StepMarks dp = dp_step(4, 11.1, 12.1, {6, 9}, {8, 11});
  const auto d = decompose_efficiency(ranks_of({dp, dp}), efficiency(11, 12.1), false);
  ASSERT_TRUE(d.measured) << d.not_measured;
  EXPECT_NEAR(d.ms.dilation_ms, 1.1, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 0, 1e-9);
  EXPECT_NEAR(d.dp_step_ms, 12.1, 1e-9);
  EXPECT_NEAR(d.dilation, 1.1 / 12.1, 1e-9);
  EXPECT_NEAR(d.loss, 1.1 / 12.1, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
  EXPECT_TRUE(d.adds_up);
}

TEST(EfficiencyDecomposition, OnlyTail) {
  // Backward as solo (done at 10), the last all-reduce ends at 12, the update (1 ms) waits for it.
  const StepMarks dp = dp_step(4, 10, 13, {6, 10}, {8, 12});
  const auto d = decompose_efficiency(ranks_of({dp, dp}), efficiency(11, 13), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ms.dilation_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 2, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 0, 1e-9);
  EXPECT_NEAR(d.tail, 2.0 / 13, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
  EXPECT_TRUE(d.adds_up);
}

TEST(EfficiencyDecomposition, OnlySkew) {
  // Rank 1 arrives at the last all-reduce (an instant one) half a millisecond after rank 0, which waits in it.
  const StepMarks waiting = dp_step(4, 10, 11.5, {10}, {10.5});
  const StepMarks late = dp_step(4, 10, 11, {10}, {10});
  const auto d = decompose_efficiency(ranks_of({waiting, late}), efficiency(11, 11.5), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ms.dilation_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 0.5, 1e-9);  // on the slowest rank of each step: rank 0
  EXPECT_NEAR(d.skew, 0.5 / 11.5, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
  EXPECT_TRUE(d.adds_up);
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_NEAR(d.ranks[0].ms.skew_ms, 0.5, 1e-9);
  EXPECT_NEAR(d.ranks[1].ms.skew_ms, 0, 1e-9);  // the last to arrive waits for nobody
  EXPECT_NEAR(d.ranks[1].dp_step_ms, 11, 1e-9);
  EXPECT_NEAR(d.ranks[0].solo_step_ms, 11, 1e-9);
}

TEST(EfficiencyDecomposition, AllThree) {
  // Backward 6.5 ms (dilation 0.5); the last all-reduce takes 1 ms on rank 1 and 1.75 on rank 0, which waits
  // 0.75 ms for it; the update waits for it: tail 1 ms of transfer beyond the solo update.
  const StepMarks waiting = dp_step(4, 10.5, 13.25, {6, 10.5}, {8, 12.25});
  const StepMarks late = dp_step(4, 10.5, 12.5, {6, 10.5}, {8, 11.5});
  const auto d = decompose_efficiency(ranks_of({waiting, late}), efficiency(11, 13.25), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ms.dilation_ms, 0.5, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 1, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 0.75, 1e-9);
  EXPECT_NEAR(d.dilation + d.tail + d.skew, 1 - 11 / 13.25, 1e-9);
  EXPECT_TRUE(d.adds_up);
}

TEST(EfficiencyDecomposition, WaitsDuringTheBackwardHideOnTheirOwnStreamAndCountOnTheComputeTimeline) {
  // Rank 0 waits 1 ms in the first all-reduce, issued at 6 ms, during the backward pass.
  const StepMarks waiting_gpu = dp_step(4, 10, 11, {6}, {8});
  const StepMarks late = dp_step(4, 10, 11, {7}, {8});
  auto d = decompose_efficiency(ranks_of({waiting_gpu, late}), 1.0, false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ranks[0].ms.skew_ms, 0, 1e-9);  // the compute stream went on beside it
  // On the CPU device the host does the all-reduce between nodes: the backward is 1 ms longer, and that is waiting.
  const StepMarks waiting_cpu = dp_step(4, 11, 12, {6}, {8});
  d = decompose_efficiency(ranks_of({waiting_cpu, late}), efficiency(11, 12), true);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ranks[0].ms.skew_ms, 1, 1e-9);
  EXPECT_NEAR(d.ranks[0].ms.dilation_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 1, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
}

TEST(EfficiencyDecomposition, ResidualReportedWhenTheTermsDoNotAddUp) {
  // The forward pass took 1 ms longer in the dp phase: no term claims it, so it stays in the residual.
  const StepMarks dp = dp_step(5, 11, 12, {7}, {9});
  const auto d = decompose_efficiency(ranks_of({dp, dp}), efficiency(11, 12), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.dilation + d.tail + d.skew, 0, 1e-9);
  EXPECT_NEAR(d.residual, 1.0 / 12, 1e-9);
  EXPECT_FALSE(d.adds_up);
}

TEST(EfficiencyDecomposition, TakesEachStepsSlowestRankThenTheMedian) {
  // Three steps; the slowest rank changes: step 0 rank 0 (skew 0.5), steps 1, 2 rank 1 (skew 0.25, 0.75).
  std::vector<RankTimelines> ranks = ranks_of({solo_step(), solo_step()}, 3);
  ranks[0].dp = {dp_step(4, 10, 11.5, {10}, {10.5}), dp_step(4, 10, 11, {10}, {10}), dp_step(4, 10, 11, {10}, {10})};
  ranks[1].dp = {dp_step(4, 10, 11, {10}, {10}), dp_step(4, 10, 11.25, {10}, {10.25}),
                 dp_step(4, 10, 11.75, {10}, {10.75})};
  const auto d = decompose_efficiency(ranks, efficiency(11, 11.5), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.dp_step_ms, 11.5, 1e-9);
  EXPECT_NEAR(d.ms.skew_ms, 0.5, 1e-9);
  EXPECT_NEAR(d.ranks[1].ms.skew_ms, 0.25, 1e-9);  // its own median step (11, 11.25, 11.75 ms): 0.25
}

TEST(EfficiencyDecomposition, TermsOfTheMedianStepAddUpWhereSeparateMediansWouldNot) {
  // Steps of 12, 13 and 14 ms: dilation 1; tail 2; dilation 3. Medians term by term would say dilation 1, tail 0.
  std::vector<RankTimelines> ranks = ranks_of({solo_step(), solo_step()}, 3);
  ranks[0].dp = {dp_step(4, 11, 12, {6}, {8}), dp_step(4, 10, 13, {10}, {12}), dp_step(4, 13, 14, {6}, {8})};
  ranks[1].dp = ranks[0].dp;
  auto d = decompose_efficiency(ranks, efficiency(11, 13), false);
  ASSERT_TRUE(d.measured);
  EXPECT_NEAR(d.ms.dilation_ms, 0, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 2, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
  // An even count: halfway between the two middle steps (12 and 13 ms), as the median is.
  for (RankTimelines& rank : ranks) rank.dp.pop_back();
  d = decompose_efficiency(ranks, efficiency(11, 12.5), false);
  EXPECT_NEAR(d.dp_step_ms, 12.5, 1e-9);
  EXPECT_NEAR(d.ms.dilation_ms, 0.5, 1e-9);
  EXPECT_NEAR(d.ms.tail_ms, 1, 1e-9);
  EXPECT_NEAR(d.residual, 0, 1e-9);
  EXPECT_TRUE(d.adds_up);
}

TEST(EfficiencyDecomposition, WaitIsTheExcessOverTheShortestRank) {
  std::vector<RankTimelines> ranks(3);
  ranks[0].dp = {dp_step(4, 10, 11, {6, 9}, {8, 10})};
  ranks[1].dp = {dp_step(4, 10, 11, {6.5, 9}, {8, 9.5})};
  ranks[2].dp = {dp_step(4, 10, 11, {7.5, 9}, {8, 9.25}), dp_step(4, 10, 11, {7}, {8})};  // one step more
  const auto waits = wait_for_slowest(ranks);
  ASSERT_EQ(waits.size(), 3u);
  ASSERT_EQ(waits[0].size(), 1u);  // the steps every rank has
  ASSERT_EQ(waits[0][0].size(), 2u);
  EXPECT_DOUBLE_EQ(waits[0][0][0].ms, 1.5);
  EXPECT_DOUBLE_EQ(waits[0][0][0].start_ms, 6);
  EXPECT_DOUBLE_EQ(waits[1][0][0].ms, 1.0);
  EXPECT_DOUBLE_EQ(waits[2][0][0].ms, 0.0);
  EXPECT_DOUBLE_EQ(waits[0][0][1].ms, 0.75);
  EXPECT_DOUBLE_EQ(waits[2][0][1].ms, 0.0);
}

TEST(EfficiencyDecomposition, NotMeasuredWithoutTwoRanksOrBothPhases) {
  EXPECT_FALSE(decompose_efficiency(ranks_of({solo_step()}), 1.0, false).measured);
  std::vector<RankTimelines> ranks = ranks_of({dp_step(4, 10, 11, {6}, {8}), dp_step(4, 10, 11, {6}, {8})});
  ranks[1].solo.clear();
  const auto d = decompose_efficiency(ranks, 1.0, false);
  EXPECT_FALSE(d.measured);
  EXPECT_NE(d.not_measured.find("solo"), std::string::npos);
}

}  // namespace
}  // namespace sb
