// `--bucket-mb auto` (issue 26): the bucket size chosen by measurement. The comm sweep measures what one
// all-reduce of each of a few sizes costs on this job's communicator; the profiled solo step says when each
// gradient is written. For each candidate size the buckets are cut from the real gradient layout and their
// all-reduces replayed on one communication stream beside the backward pass: a bucket starts when its last
// gradient is written and the stream is free, and the tail is what is left after the last backward node. The
// size with the shortest predicted tail wins; within kTailTieMs of the shortest, the larger size (fewer NCCL
// launches beside the backward pass, whose SM theft the model does not see).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/planner.h"
#include "scalebench/result.h"

namespace sb {

constexpr double kTailTieMs = 0.05;

// One all-reduce's device time by message size, measured: piecewise linear between the sizes measured, linear
// beyond them through the last two (the bandwidth term), and the smallest size's time below it (latency).
class AllReduceCost {
 public:
  explicit AllReduceCost(std::vector<std::pair<uint64_t, double>> ms_by_bytes);  // sizes ascending, at least one
  double ms(uint64_t bytes) const;
  const std::vector<std::pair<uint64_t, double>>& measured() const { return points_; }

 private:
  std::vector<std::pair<uint64_t, double>> points_;
};

// When the all-reduces of `buckets` (in issue order) would end after the backward pass's last node, given when
// each node finishes (`node_done_ms`, by node index, from the step's first node) and what each all-reduce costs.
double predicted_tail_ms(const std::vector<GradientBucket>& buckets, const std::vector<double>& node_done_ms,
                         const AllReduceCost& cost);

// The sizes `--bucket-mb auto` tries, ascending: 1, 2, 5, 10, 25, 50, 100 and 200 MiB, and below 1 MiB the
// gradients' 32nd, 16th, 8th, quarter and half (rounded down to 4 KiB) where the gradients are that small.
std::vector<uint64_t> bucket_candidates_bytes(uint64_t gradient_bytes);

// Picks among `candidates` (bytes, ascending); `cut` cuts the gradients into buckets of a size.
BucketAuto choose_bucket_bytes(const std::vector<uint64_t>& candidates,
                                 const std::function<std::vector<GradientBucket>(uint64_t)>& cut,
                                 const std::vector<double>& node_done_ms, const AllReduceCost& cost);

}  // namespace sb
