// 1 − E = dilation + tail + skew from measured timelines (src/train/efficiency_decomposition.h).
#include "src/train/efficiency_decomposition.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scalebench/stats.h"

namespace sb {
namespace {

double median(std::vector<double> values) { return values.empty() ? 0.0 : percentile(std::move(values), 50); }

// The time [from, to] shares with the wait interval.
double overlap(const WaitInterval& wait, double from, double to) {
  return std::max(0.0, std::min(wait.start_ms + wait.ms, to) - std::max(wait.start_ms, from));
}

// The median of `values` as stats.h's percentile(…, 50) interpolates it: the steps below and above it and the weight
// of the one above. The terms are taken at that step, interpolated alike, so that they add up as the step does.
struct MedianStep {
  size_t below = 0, above = 0;
  double fraction = 0;
};
MedianStep median_step(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  const double position = (static_cast<double>(values.size()) - 1) / 2;
  const auto below = static_cast<size_t>(std::floor(position));
  return {order[below], order[std::min(below + 1, order.size() - 1)], position - static_cast<double>(below)};
}
double at(const MedianStep& m, double below, double above) { return below + (above - below) * m.fraction; }
DecompositionTerms at(const MedianStep& m, const DecompositionTerms& below, const DecompositionTerms& above) {
  return {at(m, below.dilation_ms, above.dilation_ms), at(m, below.tail_ms, above.tail_ms),
          at(m, below.skew_ms, above.skew_ms)};
}

size_t common_steps(const std::vector<RankTimelines>& ranks) {
  size_t steps = std::numeric_limits<size_t>::max();
  for (const RankTimelines& rank : ranks) steps = std::min(steps, rank.dp.size());
  return ranks.empty() ? 0 : steps;
}

}  // namespace

std::vector<std::vector<std::vector<WaitInterval>>> wait_for_slowest(const std::vector<RankTimelines>& ranks) {
  const size_t steps = common_steps(ranks);
  std::vector<std::vector<std::vector<WaitInterval>>> waits(ranks.size(),
                                                            std::vector<std::vector<WaitInterval>>(steps));
  for (size_t s = 0; s < steps; ++s) {
    size_t buckets = std::numeric_limits<size_t>::max();
    for (const RankTimelines& rank : ranks) {
      buckets = std::min({buckets, rank.dp[s].bucket_start_ms.size(), rank.dp[s].bucket_end_ms.size()});
    }
    for (size_t b = 0; b < buckets; ++b) {
      double shortest = std::numeric_limits<double>::infinity();
      for (const RankTimelines& rank : ranks) {
        shortest = std::min(shortest, rank.dp[s].bucket_end_ms[b] - rank.dp[s].bucket_start_ms[b]);
      }
      for (size_t r = 0; r < ranks.size(); ++r) {
        const StepMarks& step = ranks[r].dp[s];
        const double duration = step.bucket_end_ms[b] - step.bucket_start_ms[b];
        waits[r][s].push_back(WaitInterval{step.bucket_start_ms[b], std::max(0.0, duration - shortest)});
      }
    }
  }
  return waits;
}

DecompositionTerms decompose_step(const StepMarks& dp, double solo_backward_ms, double solo_after_backward_ms,
                                  const std::vector<WaitInterval>& waits, bool comm_on_compute_timeline) {
  double skew_in_backward = 0, skew_after = 0;
  const double step_end = std::max(dp.nodes_done_ms, dp.step_done_ms);
  for (const WaitInterval& wait : waits) {
    if (comm_on_compute_timeline) skew_in_backward += overlap(wait, dp.forward_done_ms, dp.nodes_done_ms);
    skew_after += overlap(wait, dp.nodes_done_ms, step_end);
  }
  DecompositionTerms terms;
  terms.dilation_ms = (dp.nodes_done_ms - dp.forward_done_ms) - solo_backward_ms - skew_in_backward;
  terms.tail_ms = (dp.step_done_ms - dp.nodes_done_ms) - solo_after_backward_ms - skew_after;
  terms.skew_ms = skew_in_backward + skew_after;
  return terms;
}

EfficiencyDecomposition decompose_efficiency(const std::vector<RankTimelines>& ranks, double efficiency,
                                             bool comm_on_compute_timeline) {
  EfficiencyDecomposition out;
  out.efficiency = efficiency;
  out.loss = 1.0 - efficiency;
  if (ranks.size() < 2) {
    out.not_measured = "fewer than two ranks";
    return out;
  }
  for (const RankTimelines& rank : ranks) {
    if (rank.solo.empty() || rank.dp.empty()) {
      out.not_measured = "a rank without timed solo and dp steps";
      return out;
    }
  }
  const size_t steps = common_steps(ranks);
  const auto waits = wait_for_slowest(ranks);
  std::vector<std::vector<DecompositionTerms>> terms(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> backward, after, solo_steps, dp_steps;
    for (const StepMarks& step : ranks[r].solo) {
      backward.push_back(step.nodes_done_ms - step.forward_done_ms);
      after.push_back(step.step_done_ms - step.nodes_done_ms);
      solo_steps.push_back(step.step_ms);
    }
    const double solo_backward = median(backward), solo_after = median(after);
    for (size_t s = 0; s < steps; ++s) {
      terms[r].push_back(decompose_step(ranks[r].dp[s], solo_backward, solo_after, waits[r][s],
                                        comm_on_compute_timeline));
      dp_steps.push_back(ranks[r].dp[s].step_ms);
    }
    const MedianStep m = median_step(dp_steps);
    EfficiencyDecomposition::Rank rank;
    rank.ms = at(m, terms[r][m.below], terms[r][m.above]);
    rank.solo_step_ms = median(solo_steps);
    rank.dp_step_ms = at(m, dp_steps[m.below], dp_steps[m.above]);
    out.ranks.push_back(rank);
  }
  // As the dp step's statistics: per step its slowest rank, then the median step.
  std::vector<double> slowest_step;
  std::vector<DecompositionTerms> slowest_terms;
  for (size_t s = 0; s < steps; ++s) {
    size_t slowest = 0;
    for (size_t r = 1; r < ranks.size(); ++r) {
      if (ranks[r].dp[s].step_ms > ranks[slowest].dp[s].step_ms) slowest = r;
    }
    slowest_step.push_back(ranks[slowest].dp[s].step_ms);
    slowest_terms.push_back(terms[slowest][s]);
  }
  const MedianStep m = median_step(slowest_step);
  out.dp_step_ms = at(m, slowest_step[m.below], slowest_step[m.above]);
  if (!(out.dp_step_ms > 0)) {
    out.not_measured = "no dp step time";
    return out;
  }
  out.ms = at(m, slowest_terms[m.below], slowest_terms[m.above]);
  out.dilation = out.ms.dilation_ms / out.dp_step_ms;
  out.tail = out.ms.tail_ms / out.dp_step_ms;
  out.skew = out.ms.skew_ms / out.dp_step_ms;
  out.residual = out.loss - (out.dilation + out.tail + out.skew);
  out.adds_up = std::fabs(out.residual) <= kDecompositionTolerance;
  out.measured = true;
  return out;
}

}  // namespace sb
