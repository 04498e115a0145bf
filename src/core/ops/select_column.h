// The select_column family: one column of a (rows, cols) tensor, and its backward (the column's gradient in
// place, zeros elsewhere). Kernels: src/cpu/select_column.cpp, src/cuda/select_column.cu.
#pragma once

#include <cstdint>

#include "scalebench/graph.h"

namespace sb {

struct SelectColumnParams {
  int64_t rows = 0, cols = 0, column = 0;
};
NodeAttributes encode(const SelectColumnParams& params);
SelectColumnParams select_column_params(const Node& node);  // of select_column and select_column_backward

}  // namespace sb
