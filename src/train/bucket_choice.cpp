#include "src/train/bucket_choice.h"

#include <algorithm>

#include "scalebench/error.h"

namespace sb {

AllReduceCost::AllReduceCost(std::vector<std::pair<uint64_t, double>> ms_by_bytes) : points_(std::move(ms_by_bytes)) {
  if (points_.empty()) throw RuntimeFailure("the bucket-size sweep measured no all-reduce");
  std::sort(points_.begin(), points_.end());
}

double AllReduceCost::ms(uint64_t bytes) const {
  if (bytes <= points_.front().first || points_.size() == 1) {
    return points_.size() == 1 ? points_.front().second * std::max(1.0, double(bytes) / double(points_.front().first))
                               : points_.front().second;
  }
  size_t hi = 1;
  while (hi + 1 < points_.size() && points_[hi].first < bytes) ++hi;
  const auto& [x0, y0] = points_[hi - 1];
  const auto& [x1, y1] = points_[hi];
  const double slope = (y1 - y0) / double(x1 - x0);
  return std::max(0.0, y0 + slope * (double(bytes) - double(x0)));
}

double predicted_tail_ms(const std::vector<GradientBucket>& buckets, const std::vector<double>& node_done_ms,
                         const AllReduceCost& cost) {
  if (node_done_ms.empty()) return 0;
  std::vector<GradientBucket> in_order = buckets;  // the reducer issues them by ready node
  std::stable_sort(in_order.begin(), in_order.end(), [](const GradientBucket& a, const GradientBucket& b) {
    return a.ready_after_node < b.ready_after_node;
  });
  double stream_free = 0;
  for (const GradientBucket& bucket : in_order) {
    const int node = std::min<int>(bucket.ready_after_node, int(node_done_ms.size()) - 1);
    const double ready = node < 0 ? 0.0 : node_done_ms[size_t(node)];
    stream_free = std::max(ready, stream_free) + cost.ms(bucket.bytes);
  }
  return std::max(0.0, stream_free - node_done_ms.back());
}

std::vector<uint64_t> bucket_candidates_bytes(uint64_t gradient_bytes) {
  std::vector<uint64_t> bytes;
  // A model whose gradients are a few MiB has sizes to choose among below 1 MiB too: its 32nd, 16th, … half.
  for (uint64_t part : {32, 16, 8, 4, 2}) {
    const uint64_t size = gradient_bytes / part / 4096 * 4096;
    if (size >= 4096 && size < (1ull << 20) && (bytes.empty() || size > bytes.back())) bytes.push_back(size);
  }
  for (uint64_t mib : {1, 2, 5, 10, 25, 50, 100, 200}) bytes.push_back(mib << 20);
  return bytes;
}

BucketAuto choose_bucket_bytes(const std::vector<uint64_t>& candidates,
                                 const std::function<std::vector<GradientBucket>(uint64_t)>& cut,
                                 const std::vector<double>& node_done_ms, const AllReduceCost& cost) {
  BucketAuto choice;
  choice.measured_ms = cost.measured();
  for (uint64_t bytes : candidates) {
    const std::vector<GradientBucket> buckets = cut(bytes);
    // Past the size that holds every gradient in one bucket a larger one changes nothing.
    if (!choice.candidates.empty() && choice.candidates.back().buckets == buckets.size() && buckets.size() <= 1) break;
    choice.candidates.push_back({bytes, buckets.size(), predicted_tail_ms(buckets, node_done_ms, cost)});
  }
  if (choice.candidates.empty()) throw RuntimeFailure("--bucket-mb auto: no candidate bucket size");
  double shortest = choice.candidates.front().predicted_tail_ms;
  for (const BucketAuto::Candidate& c : choice.candidates) shortest = std::min(shortest, c.predicted_tail_ms);
  for (const BucketAuto::Candidate& c : choice.candidates) {
    if (c.predicted_tail_ms <= shortest + kTailTieMs) choice.chosen_bytes = c.bytes;  // the largest such
  }
  return choice;
}

}  // namespace sb
