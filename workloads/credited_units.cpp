// Units per step counted from the synthesized batch itself (include/scalebench/workload.h credited_units): the
// non-padding target tokens a translation step really trains on, not a mean length times the batch.
#include <algorithm>
#include <cstring>
#include <map>

#include "scalebench/error.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

double count_non_padding(const std::vector<int32_t>& values, int32_t padding) {
  return static_cast<double>(std::count_if(values.begin(), values.end(), [&](int32_t v) { return v != padding; }));
}

}  // namespace

double credited_units(const Graph& graph, const BuiltWorkload& built, const InputReader& read) {
  if (built.credited_inputs.empty()) return built.units_per_step;
  double units = 0;
  for (const std::string& name : built.credited_inputs) {
    const TensorId id = graph.find_tensor(name);
    const TensorInfo& info = graph.tensor(id);
    std::vector<int32_t> values(static_cast<size_t>(info.elements()));
    read(id, values.data(), info.bytes());
    units += count_non_padding(values, built.credited_padding);
  }
  return units;
}

double credited_units(const Workload& workload, const Graph& graph, const BuiltWorkload& built, uint64_t seed,
                      int64_t first_sample) {
  if (built.credited_inputs.empty()) return built.units_per_step;
  std::map<TensorId, std::vector<char>> kept;  // only the credited inputs: an image batch is never copied here
  for (const std::string& name : built.credited_inputs) kept[graph.find_tensor(name)];
  workload.synthesize(graph, seed, first_sample, [&](TensorId id, const void* data, size_t bytes) {
    const auto found = kept.find(id);
    if (found == kept.end()) return;
    found->second.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  });
  return credited_units(graph, built, [&](TensorId id, void* data, size_t bytes) {
    const std::vector<char>& copy = kept.at(id);
    if (copy.size() != bytes) {
      throw RuntimeFailure("credited input '" + graph.tensor(id).name + "' was not written by synthesize");
    }
    std::memcpy(data, copy.data(), bytes);
  });
}

}  // namespace sb
