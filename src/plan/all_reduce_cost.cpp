// α-β cost of one all-reduce, ring and tree, after NCCL's own tuning model (include/scalebench/plan_model.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "scalebench/error.h"
#include "scalebench/plan_model.h"

namespace sb {
namespace {

double hop_us(const LatencyModel& latency, const std::string& hop) {
  if (hop == "nvlink") return latency.ring_hop_nvlink_us;
  if (hop == "pci") return latency.ring_hop_pci_us;
  if (hop == "net") return latency.ring_hop_net_us;
  throw UsageError("unknown latency class '" + hop + "' (nvlink, pci, net)");
}

// A ring of `steps` steps, `network_steps` of them between nodes, each moving bytes / n: base + the hops' latency +
// bytes · steps / n over the bus bandwidth. Checks the path first.
double ring_us(const CommPath& path, double bytes, int steps, int network_steps, const LatencyModel& latency) {
  if (path.busbw_gbps <= 0) throw UsageError("a communication path needs a positive bus bandwidth");
  const double busbw = path.busbw_gbps * 1e3;  // bytes per µs
  return latency.ring_base_us + (steps - network_steps) * hop_us(latency, path.intra_hop) +
         network_steps * hop_us(latency, path.inter_hop) + bytes * steps / path.gpus / busbw;
}

}  // namespace

AllReduceCost all_reduce_cost(const CommPath& path, double bytes, const LatencyModel& latency) {
  AllReduceCost cost;
  const int n = path.gpus, m = path.nodes;
  if (n <= 1) return cost;
  cost.ring_us = ring_us(path, bytes, 2 * (n - 1), 2 * (m - 1), latency);
  const double per_node = static_cast<double>(n) / m;
  cost.tree_us = 2.0 * ((per_node - 1) + std::ceil(std::log2(static_cast<double>(m)))) * latency.tree_hop_us +
                 2.0 * bytes / (latency.tree_bandwidth_factor * path.busbw_gbps * 1e3);
  return cost;
}

AllReduceCost ring_scatter_gather_cost(const CommPath& path, double bytes, const LatencyModel& latency) {
  AllReduceCost cost;
  if (path.gpus <= 1) return cost;
  cost.ring_us = ring_us(path, bytes, path.gpus - 1, path.nodes - 1, latency);
  cost.tree_us = std::numeric_limits<double>::infinity();
  return cost;
}

}  // namespace sb
