// The drop_path family: per-sample dropout of a residual branch (NASNet's drop-path), whose backward is the same
// drop_path again (the node's Philox range). Kernels: src/cpu/drop_path.cpp, src/cuda/drop_path.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct DropPathParams {
  int64_t samples = 0;     // attribute "n": the random draws, one per sample (the executor sizes the Philox range by it)
  int64_t per_sample = 0;  // values per sample
  double p = 0;
  int64_t block_offset = 0;  // where this node's Philox range starts within the step's
};
NodeAttributes encode(const DropPathParams& params);
DropPathParams drop_path_params(const Node& node);

}  // namespace sb
