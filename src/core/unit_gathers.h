// zero3's schedule (--strategy zero3, include/scalebench/strategy.h): which bucket's parameters (a unit) are
// all-gathered before which node of a sub-step. A rank's optimizer updates only its chunk of every bucket and nothing
// gathers after the update, so before a node reads a parameter (or, in the backward pass, writes its gradient) the
// bucket holding it must be gathered again. FSDP's FULL_SHARD does the same per wrapped module: once before the
// module's forward and once more before its backward (reshard_after_forward), the unit it gathered last kept into
// the backward pass.
#pragma once

#include <cstddef>
#include <vector>

#include "scalebench/graph.h"
#include "scalebench/planner.h"

namespace sb {

// One all-gather of the parameters a sharded step runs: zero1's whole region or zero2's bucket after the update,
// zero3's unit before its use.
struct ParameterGather {
  enum class When { kAfterUpdate, kBeforeParts, kBeforeForward, kBeforeBackward };
  When when = When::kAfterUpdate;
  size_t bucket = 0;  // into the reducer's buckets (zero1: 0, the whole region)
  size_t node = 0;    // before use: the first node that needs it, where the compute stream waits for the gather
};

// The gathers of sub-step `sub_step`, in issue order: the buckets its parts (a generation before the training pass)
// read, by first reader; then the training pass's forward nodes [training_begin, forward_end), by first reader; then
// the backward nodes [forward_end, nodes) by the first node that reads one of the bucket's parameters (or their
// backward copies) or touches one of its gradients; the bucket gathered last in the forward pass, with the other pieces
// of the parameter it may be a piece of, is not gathered again for the backward pass. A bucket that is a piece of a
// larger parameter is needed where that parameter is. Views count as their storage.
// `buckets` are cut from `plan`'s gradient layout (gradient_order indices first..last).
std::vector<ParameterGather> unit_gathers(const Graph& graph, const MemoryPlan& plan,
                                         const std::vector<GradientBucket>& buckets, size_t sub_step,
                                         size_t forward_end);

}  // namespace sb
