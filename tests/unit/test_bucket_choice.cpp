// --bucket-mb auto's model (src/train/bucket_choice.h) on synthetic timelines and costs: each piece alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "scalebench/error.h"
#include "src/train/bucket_choice.h"

namespace sb {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(AllReduceCost, InterpolatesBetweenMeasuredSizesAndExtrapolatesTheBandwidthBeyond) {
  const AllReduceCost cost({{4 * kMiB, 0.4}, {1 * kMiB, 0.1}});  // any order
  EXPECT_DOUBLE_EQ(cost.ms(1 * kMiB), 0.1);
  EXPECT_DOUBLE_EQ(cost.ms(2 * kMiB), 0.2);
  EXPECT_DOUBLE_EQ(cost.ms(8 * kMiB), 0.8);      // the last two points' slope
  EXPECT_DOUBLE_EQ(cost.ms(256 << 10), 0.1);     // below the smallest: its latency
  const AllReduceCost one({{1 * kMiB, 0.3}});    // one point: latency below it, proportional above
  EXPECT_DOUBLE_EQ(one.ms(512 << 10), 0.3);
  EXPECT_DOUBLE_EQ(one.ms(2 * kMiB), 0.6);
  EXPECT_THROW(AllReduceCost({}), RuntimeFailure);
}

TEST(PredictedTail, BucketsStartWhenReadyAndWhenTheStreamIsFree) {
  const std::vector<double> node_done_ms = {1, 2, 3, 4};  // the backward pass ends at 4 ms
  const AllReduceCost cost({{1 * kMiB, 0.5}, {2 * kMiB, 1.0}});
  // Ready at 2 ms and 4 ms, 0.5 ms each: only the last one is left after the backward pass.
  std::vector<GradientBucket> buckets = {{0, 0, 0, kMiB, 1}, {1, 1, kMiB, kMiB, 3}};
  EXPECT_DOUBLE_EQ(predicted_tail_ms(buckets, node_done_ms, cost), 0.5);
  // The first one now takes 3 ms (6 MiB: 3.0 ms): the second waits for the stream until 5 ms, ends at 5.5.
  buckets[0].bytes = 6 * kMiB;
  EXPECT_DOUBLE_EQ(predicted_tail_ms(buckets, node_done_ms, cost), 1.5);
  // Issued by ready node whatever the list's order.
  std::swap(buckets[0], buckets[1]);
  EXPECT_DOUBLE_EQ(predicted_tail_ms(buckets, node_done_ms, cost), 1.5);
  // Done well before the backward pass ends: no tail.
  EXPECT_DOUBLE_EQ(predicted_tail_ms({{0, 0, 0, kMiB, 0}}, node_done_ms, cost), 0.0);
}

// 100 gradients of 1 MiB, one written per ms by nodes 0..99: buckets of `size` hold size/1 MiB of them.
std::vector<GradientBucket> cut_evenly(uint64_t size) {
  const uint64_t per = std::max<uint64_t>(1, size / kMiB);
  std::vector<GradientBucket> buckets;
  for (uint64_t first = 0; first < 100; first += per) {
    const uint64_t last = std::min<uint64_t>(99, first + per - 1);
    buckets.push_back({size_t(first), size_t(last), first * kMiB, (last - first + 1) * kMiB, int(last)});
  }
  return buckets;
}

std::vector<double> one_node_a_ms() {
  std::vector<double> done(100);
  for (size_t i = 0; i < done.size(); ++i) done[i] = double(i + 1);
  return done;
}

TEST(ChooseBucketBytes, ALatencyBoundLinkWantsFewBucketsABandwidthBoundOneSmallOnes) {
  const std::vector<uint64_t> sizes = {1 * kMiB, 5 * kMiB, 25 * kMiB, 100 * kMiB, 200 * kMiB};
  // Bandwidth-bound: 0.1 ms per MiB and no latency: small buckets keep up with the backward pass and the last
  // one is small; one 100-MiB bucket would be a 10-ms tail.
  const AllReduceCost fast_latency({{1 * kMiB, 0.1}, {100 * kMiB, 10.0}});
  const BucketAuto small = choose_bucket_bytes(sizes, cut_evenly, one_node_a_ms(), fast_latency);
  EXPECT_EQ(small.chosen_bytes, 1 * kMiB);
  ASSERT_EQ(small.candidates.size(), 4u);  // 200 MiB holds what 100 MiB holds: one bucket, not tried again
  EXPECT_NEAR(small.candidates[0].predicted_tail_ms, 0.1, 1e-9);
  EXPECT_NEAR(small.candidates[3].predicted_tail_ms, 10.0, 1e-9);
  // Latency-bound: 1.5 ms a call whatever the size (up to 100 MiB): 1-MiB buckets queue up behind each other
  // (1.5 ms each, one ready a ms) and leave 50 ms; fewer, larger calls win.
  const AllReduceCost slow_latency({{1 * kMiB, 1.5}, {100 * kMiB, 1.5 + 1e-6}});
  const BucketAuto large = choose_bucket_bytes(sizes, cut_evenly, one_node_a_ms(), slow_latency);
  EXPECT_GT(large.chosen_bytes, 1 * kMiB);
  EXPECT_GT(large.candidates[0].predicted_tail_ms, 40.0);
}

TEST(ChooseBucketBytes, ATieGoesToTheLargerSize) {
  // Free all-reduces: every size predicts no tail beyond the 0 ms of the last one's own cost; the largest wins
  // (fewer NCCL launches beside the backward pass).
  const AllReduceCost free_calls({{1 * kMiB, 0.0}, {2 * kMiB, 0.0}});
  const BucketAuto choice =
      choose_bucket_bytes({1 * kMiB, 5 * kMiB, 25 * kMiB}, cut_evenly, one_node_a_ms(), free_calls);
  EXPECT_EQ(choice.chosen_bytes, 25 * kMiB);
  EXPECT_EQ(choice.measured_ms.size(), 2u);
}

TEST(BucketCandidates, SmallGradientsGetSizesBelowOneMiB) {
  const std::vector<uint64_t> large = bucket_candidates_bytes(800 * kMiB);
  EXPECT_EQ(large.front(), 1 * kMiB);
  EXPECT_EQ(large.back(), 200 * kMiB);
  const std::vector<uint64_t> small = bucket_candidates_bytes(229376);  // 224 KiB
  ASSERT_GE(small.size(), 12u);
  EXPECT_EQ(small[0], 4096u);              // 7 KiB rounded down to 4 KiB
  EXPECT_EQ(small[4], 114688u);            // the half: 112 KiB
  EXPECT_TRUE(std::is_sorted(small.begin(), small.end()));
}

}  // namespace
}  // namespace sb
