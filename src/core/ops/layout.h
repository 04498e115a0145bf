// The layout family: add_broadcast (a table added to every trailing block of x) and swap_middle ((a, b, c, d) ->
// (a, c, b, d)). Kernels: src/cpu/layout.cpp, src/cuda/layout.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

// swap_middle's input (a, b, c, d); its output is (a, c, b, d).
struct SwapMiddleParams {
  int64_t a = 0, b = 0, c = 0, d = 0;
};
NodeAttributes encode(const SwapMiddleParams& params);
SwapMiddleParams swap_middle_params(const Node& node);

}  // namespace sb
