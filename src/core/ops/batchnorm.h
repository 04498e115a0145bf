// The batchnorm family (batchnorm, batchnorm_backward): the node's parameters, and the scratch BatchNorm's
// reductions need on a device that sums in parallel (src/cuda/batchnorm.h): per
// chunk of rows and per channel, two fp32 partial sums, combined afterwards in a fixed order (deterministic,
// no atomics). With statistics groups (GraphBuilder::set_batchnorm_groups) the groups run one after another
// and share the partial sums; the backward pass adds each group's (dbeta, dgamma) pair (groups, 2, C), summed
// over the groups at the end. The graph builder declares it as a kWorkspace tensor so the planner accounts for it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// Per-channel normalisation of a (rows, channels) view of x over its rows, in `groups` statistics groups of whole
// samples, with the running statistics' momentum and a fused activation (BatchNormOptions::Activation's number).
struct BatchNormParams {
  int64_t rows = 0, channels = 0, groups = 1;
  double epsilon = 1e-5, momentum = 0.1;
  int activation = 0;
  double slope = 0.1;
};
NodeAttributes encode(const BatchNormParams& params);
BatchNormParams batchnorm_params(const Node& node);  // of batchnorm and batchnorm_backward

constexpr int64_t kBatchNormRowsPerChunk = 64;
constexpr int64_t kBatchNormMaxChunks = 1024;

inline int64_t batchnorm_chunks(int64_t rows) {
  return std::min(kBatchNormMaxChunks, (rows + kBatchNormRowsPerChunk - 1) / kBatchNormRowsPerChunk);
}

// Floats before the per-group sums: the partial sums of one group of rows / groups rows.
inline int64_t batchnorm_partial_floats(int64_t rows, int64_t channels, int64_t groups = 1) {
  return batchnorm_chunks(rows / groups) * channels * 2;
}

// rows: all rows of the tensor (every group); groups divides rows.
inline int64_t batchnorm_workspace_bytes(int64_t rows, int64_t channels, int64_t groups = 1) {
  const int64_t per_group_sums = groups > 1 ? groups * 2 * channels : 0;
  return (batchnorm_partial_floats(rows, channels, groups) + per_group_sums) * int64_t(sizeof(float));
}

}  // namespace sb
