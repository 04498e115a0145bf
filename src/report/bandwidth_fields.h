// Choices the three bandwidth printers (console, JSON, CSV) must make the same way: which collectives a
// report covers, how the reduce op of a non-reducing collective is labelled, and the placements.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "scalebench/bandwidth.h"

namespace sb::detail {

// The collectives of a report in the order they ran: those asked for, then any that only appear in the
// results (a hand-built report may leave options.ops empty).
inline std::vector<CollectiveOp> report_ops(const BandwidthReport& report) {
  std::vector<CollectiveOp> ops = report.options.ops;
  for (const SizeResult& result : report.results) {
    if (std::find(ops.begin(), ops.end(), result.op) == ops.end()) ops.push_back(result.op);
  }
  return ops;
}

inline bool reduces(CollectiveOp op) { return pattern_reduces(op); }

// nccl-tests prints "none" where the collective does not reduce.
inline const char* redop_label(CollectiveOp op, ReduceOp reduce) {
  return reduces(op) ? reduce_op_name(reduce) : "none";
}

// "fp32" or "fp32,bf16,fp16": the element types (reduce ops) a sweep ran, in order, for one-line summaries.
inline std::string dtype_list(const BandwidthOptions& options) {
  std::string text;
  for (DType type : options.dtypes) text += std::string(text.empty() ? "" : ",") + dtype_name(type);
  return text;
}
inline std::string redop_list(const BandwidthOptions& options) {
  std::string text;
  for (ReduceOp op : options.reduces) text += std::string(text.empty() ? "" : ",") + reduce_op_name(op);
  return text;
}

struct PlacementView {
  const char* key;  // "out_of_place", "in_place"
  const PlacementResult& result;
};

// Out-of-place first, as nccl-tests' columns are.
inline std::vector<PlacementView> placements(const SizeResult& result) {
  return {{"out_of_place", result.out_of_place}, {"in_place", result.in_place}};
}

}  // namespace sb::detail
