// JSON forms of the topology model: a node as it travels from its node-local rank 0 to rank 0, the
// per-rank entries rank 0 gathers, and the `--json` document (schema_version 1, tool "scalebench",
// command "topo"). Keys carry units (total_memory_bytes, nvlink_link_gbps = GB/s, speed_mbps = Mb/s).
// Readers take missing keys as "unknown", so an older writer's document still loads.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "scalebench/error.h"
#include "scalebench/topology.h"
#include "scalebench/versions.h"
#include "src/topo/topology_detail.h"

namespace sb {

// ordered_json keeps the keys in the order written here, which reads better than alphabetical.
using json = nlohmann::ordered_json;

void to_json(json& j, const GpuInfo& g) {
  j = json{{"index", g.index},
           {"name", g.name},
           {"bus_id", g.bus_id},
           {"total_memory_bytes", g.total_memory_bytes},
           {"compute_capability", g.compute_capability},
           {"numa_node", g.numa_node},
           {"gpu_numa_id", g.gpu_numa_id},
           {"cpu_affinity", g.cpu_affinity},
           {"pcie_gen_current", g.pcie_gen_current},
           {"pcie_width_current", g.pcie_width_current},
           {"pcie_gen_max", g.pcie_gen_max},
           {"pcie_width_max", g.pcie_width_max}};
}

void from_json(const json& j, GpuInfo& g) {
  g.index = j.value("index", 0);
  g.name = j.value("name", "");
  g.bus_id = j.value("bus_id", "");
  g.total_memory_bytes = j.value("total_memory_bytes", uint64_t{0});
  g.compute_capability = j.value("compute_capability", 0);
  g.numa_node = j.value("numa_node", -1);
  g.gpu_numa_id = j.value("gpu_numa_id", -1);
  g.cpu_affinity = j.value("cpu_affinity", "");
  g.pcie_gen_current = j.value("pcie_gen_current", 0);
  g.pcie_width_current = j.value("pcie_width_current", 0);
  g.pcie_gen_max = j.value("pcie_gen_max", 0);
  g.pcie_width_max = j.value("pcie_width_max", 0);
}

void to_json(json& j, const GpuPair& p) {
  j = json{{"gpu_a", p.gpu_a},
           {"gpu_b", p.gpu_b},
           {"path_type", p.path_type},
           {"pcie_path", p.pcie_path},
           {"nvlink_count", p.nvlink_count},
           {"nvlink_version", p.nvlink_version},
           {"nvlink_link_gbps", p.nvlink_link_gbps},
           // Derived, for readers: raw GB/s one way over all links of the pair; 0 unknown.
           {"nvlink_total_gbps", p.nvlink_count * p.nvlink_link_gbps},
           {"p2p_read", p.p2p_read},
           {"p2p_write", p.p2p_write},
           {"p2p_read_status", p.p2p_read_status},
           {"p2p_write_status", p.p2p_write_status},
           {"cuda_peer_access", p.cuda_peer_access},
           {"cuda_performance_rank", p.cuda_performance_rank}};
}

void from_json(const json& j, GpuPair& p) {
  p.gpu_a = j.value("gpu_a", 0);
  p.gpu_b = j.value("gpu_b", 0);
  p.path_type = j.value("path_type", "");
  p.pcie_path = j.value("pcie_path", "");
  p.nvlink_count = j.value("nvlink_count", 0);
  p.nvlink_version = j.value("nvlink_version", "");
  p.nvlink_link_gbps = j.value("nvlink_link_gbps", 0.0);
  p.p2p_read = j.value("p2p_read", false);
  p.p2p_write = j.value("p2p_write", false);
  p.p2p_read_status = j.value("p2p_read_status", "");
  p.p2p_write_status = j.value("p2p_write_status", "");
  p.cuda_peer_access = j.value("cuda_peer_access", false);
  p.cuda_performance_rank = j.value("cuda_performance_rank", -1);
}

void to_json(json& j, const NetworkAdapter& a) {
  j = json{{"name", a.name}, {"kind", a.kind},          {"speed_mbps", a.speed_mbps}, {"state", a.state},
           {"rdma", a.rdma}, {"virtual", a.is_virtual}, {"numa_node", a.numa_node}};
}

void from_json(const json& j, NetworkAdapter& a) {
  a.name = j.value("name", "");
  a.kind = j.value("kind", "");
  a.speed_mbps = j.value("speed_mbps", int64_t{-1});
  a.state = j.value("state", "");
  a.rdma = j.value("rdma", false);
  a.is_virtual = j.value("virtual", false);
  a.numa_node = j.value("numa_node", -1);
}

void to_json(json& j, const NodeTopology& n) {
  j = json{{"host", n.host},
           {"node_index", n.node_index},
           {"local_ranks", n.local_ranks},
           {"nvml_available", n.nvml_available},
           {"nvml_note", n.nvml_note},
           {"driver_version", n.driver_version},
           {"cuda_note", n.cuda_note},
           {"gpus", n.gpus},
           {"pairs", n.pairs},
           {"network_adapters", n.network_adapters}};
}

void from_json(const json& j, NodeTopology& n) {
  n.host = j.value("host", "");
  n.node_index = j.value("node_index", 0);
  n.local_ranks = j.value("local_ranks", 1);
  n.nvml_available = j.value("nvml_available", false);
  n.nvml_note = j.value("nvml_note", "");
  n.driver_version = j.value("driver_version", "");
  n.cuda_note = j.value("cuda_note", "");
  n.gpus = j.value("gpus", std::vector<GpuInfo>{});
  n.pairs = j.value("pairs", std::vector<GpuPair>{});
  n.network_adapters = j.value("network_adapters", std::vector<NetworkAdapter>{});
}

void to_json(json& j, const RankPlacement& r) {
  j = json{{"rank", r.rank},     {"node_index", r.node_index}, {"host", r.host}, {"local_rank", r.local_rank},
           {"device", r.device}, {"transport", r.transport}};
}

void from_json(const json& j, RankPlacement& r) {
  r.rank = j.value("rank", 0);
  r.node_index = j.value("node_index", 0);
  r.host = j.value("host", "");
  r.local_rank = j.value("local_rank", 0);
  r.device = j.value("device", "");
  r.transport = j.value("transport", "");
}

namespace {

json parse_object(const std::string& text, const char* what) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) throw RuntimeFailure(std::string("malformed ") + what + " JSON");
  return parsed;
}

}  // namespace

std::string node_topology_to_json(const NodeTopology& node) { return json(node).dump(); }

NodeTopology node_topology_from_json(const std::string& text) {
  try {
    return parse_object(text, "node topology").get<NodeTopology>();
  } catch (const json::exception& error) {
    throw RuntimeFailure(std::string("malformed node topology JSON: ") + error.what());
  }
}

std::string topo_report_json(const TopoReport& report) {
  json document = {{"schema_version", 1},
                   {"tool", "scalebench"},
                   {"command", "topo"},
                   {"scalebench_version", SB_VERSION},
                   {"git_commit", scalebench_git_commit()},
                   {"world_size", report.world_size},
                   {"node_count", report.nodes.size()},
                   {"transport",
                    {{"probed", report.transport_probed},
                     {"backend", report.transport_backend},
                     {"in_use", report.transports},
                     {"note", report.transport_note}}},
                   {"ranks", report.ranks},
                   {"nodes", report.nodes}};
  return document.dump(2) + "\n";
}

TopoReport topo_report_from_json(const std::string& text) {
  try {
    const json document = parse_object(text, "topo report");
    TopoReport report;
    report.ranks = document.value("ranks", std::vector<RankPlacement>{});
    report.nodes = document.value("nodes", std::vector<NodeTopology>{});
    report.world_size = document.value("world_size", static_cast<int>(report.ranks.size()));
    return report;
  } catch (const json::exception& error) {
    throw RuntimeFailure(std::string("malformed topo report JSON: ") + error.what());
  }
}

namespace detail {

std::string rank_entry_json(const RankPlacement& placement, const NodeTopology* node) {
  json entry = {{"placement", placement}, {"node", node ? json(*node) : json(nullptr)}};
  return entry.dump();
}

TopoReport assemble_topo_report(const std::vector<std::string>& rank_entries) {
  TopoReport report;
  report.world_size = static_cast<int>(rank_entries.size());
  try {
    for (const std::string& text : rank_entries) {
      const json entry = parse_object(text, "rank entry");
      RankPlacement placement = entry.value("placement", json::object()).get<RankPlacement>();
      if (entry.contains("node") && entry["node"].is_object()) {
        NodeTopology node = entry["node"].get<NodeTopology>();
        node.node_index = placement.node_index;
        report.nodes.push_back(std::move(node));
      }
      report.ranks.push_back(std::move(placement));
    }
  } catch (const json::exception& error) {
    throw RuntimeFailure(std::string("malformed topo rank entry: ") + error.what());
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(),
                   [](const NodeTopology& a, const NodeTopology& b) { return a.node_index < b.node_index; });
  std::stable_sort(report.ranks.begin(), report.ranks.end(),
                   [](const RankPlacement& a, const RankPlacement& b) { return a.rank < b.rank; });
  for (const RankPlacement& placement : report.ranks) {
    const std::string& t = placement.transport;
    if (!t.empty() &&
        std::find(report.transports.begin(), report.transports.end(), t) == report.transports.end()) {
      report.transports.push_back(t);
    }
  }
  return report;
}

}  // namespace detail
}  // namespace sb
