// The concat family: concat (parts joined along the last dimension) and split (its inverse), each the other's
// gradient. Attributes: parts, rows (of the (rows, width) views) and w0, w1, ... (each part's width; at most 16
// parts). Kernels: src/cpu/concat.cpp, src/cuda/concat.cu.
#pragma once

#include <cstdint>
#include <vector>

#include "scalebench/graph.h"

namespace sb {

constexpr size_t kMaxConcatParts = 16;

struct ConcatParams {
  int64_t rows = 0;
  std::vector<int64_t> widths;  // one per part
};
NodeAttributes encode(const ConcatParams& params);
ConcatParams concat_params(const Node& node);  // of concat and split

}  // namespace sb
