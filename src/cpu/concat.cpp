// Channel concatenation and split, CPU reference (concat.h).
#include "src/cpu/concat.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {

void concat_last(const std::vector<const float*>& parts, const std::vector<int64_t>& widths, float* y, int64_t rows) {
  SB_CHECK(parts.size() == widths.size() && !parts.empty(), "concat_last: one width per part");
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      std::copy_n(parts[k] + r * widths[k], widths[k], y + r * total + offset);
      offset += widths[k];
    }
  }
}

void split_last(const float* x, const std::vector<float*>& parts, const std::vector<int64_t>& widths, int64_t rows) {
  SB_CHECK(parts.size() == widths.size() && !parts.empty(), "split_last: one width per part");
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      std::copy_n(x + r * total + offset, widths[k], parts[k] + r * widths[k]);
      offset += widths[k];
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

std::vector<int64_t> widths(const Node& n) {
  std::vector<int64_t> w;
  for (int64_t k = 0; k < size_attr(n, "parts"); ++k) w.push_back(size_attr(n, ("w" + std::to_string(k)).c_str()));
  return w;
}

void concat(CpuExecutor& e, const Node& n) {
  std::vector<const float*> parts;
  for (TensorId id : n.inputs) parts.push_back(e.f32(id));
  cpu::concat_last(parts, widths(n), e.f32(n.outputs[0]), size_attr(n, "rows"));
}

void split(CpuExecutor& e, const Node& n) {
  std::vector<float*> parts;
  for (TensorId id : n.outputs) parts.push_back(e.f32(id));
  cpu::split_last(e.f32(n.inputs[0]), parts, widths(n), size_attr(n, "rows"));
}

}  // namespace

void bind_concat_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"concat", concat},
      {"split", split},
  });
}

}  // namespace sb::detail
