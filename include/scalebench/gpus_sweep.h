// `--gpus-sweep LIST|auto` (issue 29): the scaling curve in one job. Which sizes k a job trains at, and which ranks
// form each k's group: a node's best-connected GPUs first (NVLink, then the closest PCIe path), then the next
// node, so that the curve bends where the links change, and says which links each k used. Pure functions of the
// gathered topology (topology.h), so the grouping is tested on recorded layouts of machines not lent here.
#pragma once

#include <string>
#include <vector>

#include "scalebench/result.h"
#include "scalebench/topology.h"

namespace sb {

struct SweepRequest {
  bool asked = false;
  bool automatic = false;   // auto: 1, 2, 4, … within rank 0's node, the whole node, then whole nodes, and N
  std::vector<int> sizes;   // as listed (automatic: empty)
  bool concurrent = false;  // --concurrent-groups: N/k groups of k train at once
};

// "1,2,4" or "auto". Throws UsageError naming the problem: not a whole number, below 1, a size listed twice.
SweepRequest parse_gpus_sweep(const std::string& text);

// The sizes to train at, ascending, from 1 to N = world_size. `ranks_per_node` in fill order (rank 0's node
// first). Throws UsageError for a size above N, or, with concurrent groups, one that does not divide N.
std::vector<int> resolve_sweep_sizes(const SweepRequest& request, int world_size,
                                     const std::vector<int>& ranks_per_node);

// How two ranks' devices are joined, weakest last: "same GPU" (ranks sharing a device), NVLink ("NV18", as
// `nvidia-smi topo -m` prints it), the PCIe path ("PIX", "PXB", "PHB", "NODE", "SYS"), "host" (the same node,
// no GPU link known: the CPU device), "network" (another node).
struct LinkClass {
  int cost = 0;          // the order above
  int nvlink_count = 0;  // among NVLink pairs, more links is stronger
  std::string label;
};
LinkClass link_between(const TopoReport& topo, int rank_a, int rank_b);
// The weakest link among `ranks` (the one their all-reduce's ring or tree is limited by); "" for one rank.
std::string weakest_link(const TopoReport& topo, const std::vector<int>& ranks);

// Every world rank, in the order the sweep fills them: rank 0's node first, from rank 0, each next rank the
// one whose weakest link to those already taken on its node is strongest (ties: fewer weak links, lower rank);
// then the other nodes in order, each from its lowest rank.
std::vector<int> topology_order(const TopoReport& topo);

// The first k ranks of `order`, or with `concurrent` every consecutive k of it (N/k groups; k must divide N).
std::vector<SweepGroup> sweep_groups(const TopoReport& topo, const std::vector<int>& order, int k, bool concurrent);

}  // namespace sb
