// The scratch BatchNorm's reductions need on a device that sums in parallel (src/cuda/batchnorm.h): per
// chunk of rows and per channel, two fp32 partial sums, combined afterwards in a fixed order (deterministic,
// no atomics). The graph builder declares it as a kWorkspace tensor so the planner accounts for it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace sb {

constexpr int64_t kBatchNormRowsPerChunk = 64;
constexpr int64_t kBatchNormMaxChunks = 1024;

inline int64_t batchnorm_chunks(int64_t rows) {
  return std::min(kBatchNormMaxChunks, (rows + kBatchNormRowsPerChunk - 1) / kBatchNormRowsPerChunk);
}

inline int64_t batchnorm_workspace_bytes(int64_t rows, int64_t channels) {
  return batchnorm_chunks(rows) * channels * 2 * int64_t(sizeof(float));
}

}  // namespace sb
