// "(2, 3, 4)": a tensor shape as the graph builder's usage errors print it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sb {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + ")";
}

}  // namespace sb
