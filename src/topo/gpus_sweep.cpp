// The sweep's sizes and groups (include/scalebench/gpus_sweep.h).
#include "scalebench/gpus_sweep.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "scalebench/error.h"

namespace sb {
namespace {

int parse_size(const std::string& item) {
  const bool digits = !item.empty() && item.size() <= 6 &&
                      std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw UsageError("--gpus-sweep: '" + item + "' is not a GPU count (a list such as 1,2,4, or auto)");
  const int k = std::stoi(item);
  if (k < 1) throw UsageError("--gpus-sweep: 0 is not a GPU count (sizes are 1 to the job's ranks)");
  return k;
}

// The device ordinal behind a placement's "cuda:N"; -1 for the CPU device or an unknown one.
int gpu_ordinal(const RankPlacement& placement) {
  const std::string prefix = "cuda:";
  if (placement.device.compare(0, prefix.size(), prefix) != 0) return -1;
  try {
    return std::stoi(placement.device.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

const RankPlacement& placement_of(const TopoReport& topo, int rank) {
  for (const RankPlacement& placement : topo.ranks) {
    if (placement.rank == rank) return placement;
  }
  throw RuntimeFailure("--gpus-sweep: rank " + std::to_string(rank) + " is missing from the gathered topology");
}

const NodeTopology* node_of(const TopoReport& topo, int node_index) {
  for (const NodeTopology& node : topo.nodes) {
    if (node.node_index == node_index) return &node;
  }
  return nullptr;
}

// PCIe paths from the closest (one switch) to the farthest (across the CPU sockets' interconnect).
int pcie_cost(const std::string& path) {
  static const std::map<std::string, int> kCost = {{"PIX", 2}, {"PXB", 3}, {"PHB", 4}, {"NODE", 5}, {"SYS", 6}};
  const auto found = kCost.find(path);
  return found == kCost.end() ? 7 : found->second;
}

// Weaker first: a higher cost, or at equal cost fewer NVLinks.
bool weaker(const LinkClass& a, const LinkClass& b) {
  if (a.cost != b.cost) return a.cost > b.cost;
  return a.nvlink_count < b.nvlink_count;
}

}  // namespace

SweepRequest parse_gpus_sweep(const std::string& text) {
  SweepRequest request;
  request.asked = true;
  if (text == "auto") {
    request.automatic = true;
    return request;
  }
  std::stringstream items(text);
  std::string item;
  std::set<int> seen;
  while (std::getline(items, item, ',')) {
    const int k = parse_size(item);
    if (!seen.insert(k).second) throw UsageError("--gpus-sweep: " + std::to_string(k) + " is listed twice");
    request.sizes.push_back(k);
  }
  if (request.sizes.empty() || text.back() == ',') {
    throw UsageError("--gpus-sweep: '" + text + "' lists no GPU count (a list such as 1,2,4, or auto)");
  }
  return request;
}

std::vector<int> resolve_sweep_sizes(const SweepRequest& request, int world_size,
                                     const std::vector<int>& ranks_per_node) {
  std::set<int> sizes;
  if (request.automatic) {
    const int first_node = ranks_per_node.empty() ? world_size : ranks_per_node.front();
    for (int k = 1; k < first_node; k *= 2) sizes.insert(k);
    sizes.insert(first_node);
    // Whole nodes after the first: 2, 4, 8, … of them, as many ranks as those nodes hold.
    std::vector<int> whole_nodes{0};
    for (int ranks : ranks_per_node) whole_nodes.push_back(whole_nodes.back() + ranks);
    for (size_t nodes = 2; nodes < whole_nodes.size(); nodes *= 2) sizes.insert(whole_nodes[nodes]);
    sizes.insert(world_size);
    if (request.concurrent) {
      for (auto k = sizes.begin(); k != sizes.end();) k = world_size % *k == 0 ? std::next(k) : sizes.erase(k);
    }
    return {sizes.begin(), sizes.end()};
  }
  for (int k : request.sizes) {
    if (k > world_size) {
      throw UsageError("--gpus-sweep: " + std::to_string(k) + " GPUs, but the job has " + std::to_string(world_size) +
                       (world_size == 1 ? " rank" : " ranks"));
    }
    if (request.concurrent && world_size % k != 0) {
      throw UsageError("--gpus-sweep: " + std::to_string(k) + " does not divide the job's " +
                       std::to_string(world_size) + " ranks into --concurrent-groups");
    }
    sizes.insert(k);
  }
  return {sizes.begin(), sizes.end()};
}

LinkClass link_between(const TopoReport& topo, int rank_a, int rank_b) {
  const RankPlacement& a = placement_of(topo, rank_a);
  const RankPlacement& b = placement_of(topo, rank_b);
  if (a.node_index != b.node_index) return {8, 0, "network"};
  const int gpu_a = gpu_ordinal(a), gpu_b = gpu_ordinal(b);
  if (gpu_a < 0 || gpu_b < 0) return {7, 0, "host"};
  if (gpu_a == gpu_b) return {0, 0, "same GPU"};
  const NodeTopology* node = node_of(topo, a.node_index);
  if (node != nullptr) {
    for (const GpuPair& pair : node->pairs) {
      if (pair.gpu_a != std::min(gpu_a, gpu_b) || pair.gpu_b != std::max(gpu_a, gpu_b)) continue;
      if (pair.nvlink_count > 0) {
        return {1, pair.nvlink_count,
                pair.path_type.empty() ? "NV" + std::to_string(pair.nvlink_count) : pair.path_type};
      }
      if (!pair.pcie_path.empty()) return {pcie_cost(pair.pcie_path), 0, pair.pcie_path};
    }
  }
  return {7, 0, "host"};
}

std::string weakest_link(const TopoReport& topo, const std::vector<int>& ranks) {
  std::optional<LinkClass> weakest;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (size_t j = i + 1; j < ranks.size(); ++j) {
      const LinkClass link = link_between(topo, ranks[i], ranks[j]);
      if (!weakest || weaker(link, *weakest)) weakest = link;
    }
  }
  return weakest ? weakest->label : "";
}

std::vector<int> topology_order(const TopoReport& topo) {
  std::map<int, std::vector<int>> ranks_by_node;  // node index → its ranks, ascending
  for (const RankPlacement& placement : topo.ranks) ranks_by_node[placement.node_index].push_back(placement.rank);
  std::vector<int> nodes;
  const int first_node = placement_of(topo, 0).node_index;
  nodes.push_back(first_node);
  for (const auto& entry : ranks_by_node) {
    if (entry.first != first_node) nodes.push_back(entry.first);
  }
  std::vector<int> order;
  for (int node : nodes) {
    std::vector<int> left = ranks_by_node[node];
    std::sort(left.begin(), left.end());
    std::vector<int> taken{left.front()};
    left.erase(left.begin());
    while (!left.empty()) {
      // The candidate whose weakest link to the taken ranks is strongest; then the smaller sum of link costs.
      auto better = [&](int a, int b) {
        LinkClass worst_a{}, worst_b{};
        int sum_a = 0, sum_b = 0;
        for (int member : taken) {
          const LinkClass la = link_between(topo, a, member), lb = link_between(topo, b, member);
          if (weaker(la, worst_a)) worst_a = la;
          if (weaker(lb, worst_b)) worst_b = lb;
          sum_a += la.cost, sum_b += lb.cost;
        }
        if (weaker(worst_b, worst_a)) return true;
        if (weaker(worst_a, worst_b)) return false;
        if (sum_a != sum_b) return sum_a < sum_b;
        return a < b;
      };
      const auto next = std::min_element(left.begin(), left.end(), better);
      taken.push_back(*next);
      left.erase(next);
    }
    order.insert(order.end(), taken.begin(), taken.end());
  }
  return order;
}

std::vector<SweepGroup> sweep_groups(const TopoReport& topo, const std::vector<int>& order, int k, bool concurrent) {
  const int n = static_cast<int>(order.size());
  SB_CHECK(k >= 1 && k <= n && (!concurrent || n % k == 0), "sweep_groups: a size the resolver refuses");
  std::vector<SweepGroup> groups;
  for (int start = 0; start + k <= n; start += k) {
    SweepGroup group;
    group.ranks.assign(order.begin() + start, order.begin() + start + k);
    group.link = weakest_link(topo, group.ranks);
    for (int rank : group.ranks) {
      const RankPlacement& placement = placement_of(topo, rank);
      group.devices.push_back(placement.host + " " + placement.device);
    }
    groups.push_back(std::move(group));
    if (!concurrent) break;
  }
  return groups;
}

}  // namespace sb
