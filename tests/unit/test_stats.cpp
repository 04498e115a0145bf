// Timing statistics against hand-computed values. Percentiles follow numpy.percentile's default
// (linear): position (n-1)*q/100 between sorted samples, e.g. numpy.percentile([1,2,3,4], 99) = 3.97.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "scalebench/stats.h"

namespace sb {
namespace {

constexpr double kTolerance = 1e-12;

TEST(Stats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> samples = {1, 2, 3, 4};
  EXPECT_NEAR(percentile(samples, 50), 2.5, kTolerance);
  EXPECT_NEAR(percentile(samples, 99), 3.97, kTolerance);  // position 2.97
  EXPECT_NEAR(percentile(samples, 25), 1.75, kTolerance);  // position 0.75
  EXPECT_NEAR(percentile(samples, 0), 1.0, kTolerance);
  EXPECT_NEAR(percentile(samples, 100), 4.0, kTolerance);
}

TEST(Stats, PercentileOfOneToHundred) {
  std::vector<double> samples;
  for (int i = 1; i <= 100; ++i) samples.push_back(i);
  EXPECT_NEAR(percentile(samples, 99), 99.01, 1e-9);  // position 98.01
  EXPECT_NEAR(percentile(samples, 95), 95.05, 1e-9);
  EXPECT_NEAR(percentile(samples, 50), 50.5, 1e-9);
}

TEST(Stats, PercentileSortsUnsortedInput) {
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 50), 2.5, kTolerance);
  EXPECT_NEAR(percentile({9, 2, 7, 4, 5, 4, 5, 4}, 99), 8.86, kTolerance);
}

TEST(Stats, PercentileOfSingleSampleIsThatSample) {
  for (double q : {0.0, 37.5, 50.0, 99.0, 100.0}) EXPECT_DOUBLE_EQ(percentile({7.25}, q), 7.25);
}

TEST(Stats, PercentileRejectsEmptyInputAndBadQ) {
  EXPECT_THROW(percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, -1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 100.5), std::invalid_argument);
}

// mean 5, population stddev 2 (the textbook example), so cv = 0.4.
TEST(Stats, SummarizeComputesEveryField) {
  const SampleStats stats = summarize({9, 2, 7, 4, 5, 4, 5, 4});
  EXPECT_EQ(stats.count, 8u);
  EXPECT_DOUBLE_EQ(stats.min, 2);
  EXPECT_DOUBLE_EQ(stats.max, 9);
  EXPECT_NEAR(stats.p50, 4.5, kTolerance);   // position 3.5 between 4 and 5
  EXPECT_NEAR(stats.p95, 8.3, kTolerance);   // position 6.65 between 7 and 9
  EXPECT_NEAR(stats.p99, 8.86, kTolerance);  // position 6.93
  EXPECT_NEAR(stats.mean, 5, kTolerance);
  EXPECT_NEAR(stats.cv, 0.4, kTolerance);
}

TEST(Stats, SummarizeOfSingleSampleHasNoSpread) {
  const SampleStats stats = summarize({12.5});
  EXPECT_EQ(stats.count, 1u);
  EXPECT_DOUBLE_EQ(stats.min, 12.5);
  EXPECT_DOUBLE_EQ(stats.p50, 12.5);
  EXPECT_DOUBLE_EQ(stats.p99, 12.5);
  EXPECT_DOUBLE_EQ(stats.max, 12.5);
  EXPECT_DOUBLE_EQ(stats.cv, 0);
}

TEST(Stats, SummarizeCvIsZeroWhenMeanIsZero) {
  EXPECT_DOUBLE_EQ(summarize({0, 0, 0}).cv, 0);
}

// Large, close samples: a sum-of-squares variance would cancel to garbage here.
TEST(Stats, SummarizeCvIsStableForLargeCloseSamples) {
  const SampleStats stats = summarize({1e9 + 1, 1e9 - 1, 1e9 + 1, 1e9 - 1});
  EXPECT_NEAR(stats.cv, 1e-9, 1e-15);
}

TEST(Stats, SummarizeRejectsEmptyInput) {
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

}  // namespace
}  // namespace sb
