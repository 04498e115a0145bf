// `run --gpus-sweep`'s plan (src/cli/gpus_sweep_plan.h).
#include "src/cli/gpus_sweep_plan.h"

#include <algorithm>
#include <map>

#include "scalebench/error.h"
#include "scalebench/gpus_sweep.h"
#include "scalebench/topology.h"

namespace sb {
namespace {

// Ranks per node in the order the sweep fills nodes: rank 0's node first, then by node index.
std::vector<int> ranks_per_node(const TopoReport& topo, const std::vector<int>& order) {
  std::map<int, int> counts;
  for (const RankPlacement& placement : topo.ranks) ++counts[placement.node_index];
  std::vector<int> per_node;
  std::vector<int> seen;
  for (int rank : order) {
    const int node = topo.ranks.at(static_cast<size_t>(rank)).node_index;
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    per_node.push_back(counts[node]);
  }
  return per_node;
}

}  // namespace

std::string plan_gpus_sweep(const std::string& sweep, bool concurrent, ProcessGroup& group, const Device& device,
                            TrainOptions& options) {
  if (sweep.empty()) {
    if (concurrent) throw UsageError("--concurrent-groups needs --gpus-sweep");
    return "";
  }
  SweepRequest request = parse_gpus_sweep(sweep);
  request.concurrent = concurrent;
  if (!options.dp) throw UsageError("--gpus-sweep needs the dp phase (--phases ... ,dp)");
  const bool lists_one = std::find(request.sizes.begin(), request.sizes.end(), 1) != request.sizes.end();
  if (lists_one && !options.solo) {
    throw UsageError("--gpus-sweep: k = 1 is the solo phase, which --phases leaves out");
  }
  const TopoReport topo = gather_topology(group, &device);
  const std::vector<int> order = topology_order(topo);
  options.sweep_sizes = resolve_sweep_sizes(request, group.size(), ranks_per_node(topo, order));
  if (!options.solo) options.sweep_sizes.erase(std::remove(options.sweep_sizes.begin(), options.sweep_sizes.end(), 1),
                                               options.sweep_sizes.end());
  options.sweep_concurrent = request.concurrent;
  for (int k : options.sweep_sizes) options.sweep_groups.push_back(sweep_groups(topo, order, k, request.concurrent));
  if (group.size() == 1) return "--gpus-sweep: one rank, so the curve has k = 1 only (the solo phase)";
  return "";
}

}  // namespace sb
