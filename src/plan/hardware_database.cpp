// Parsing and checking the GPU and fabric tables (include/scalebench/plan_database.h).
#include <algorithm>
#include <cctype>
#include <set>

#include "scalebench/error.h"
#include "scalebench/plan_database.h"
#include "src/plan/json_fields.h"

namespace sb {
namespace {

using detail::JsonFields;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A row must cite something: a database figure without a source is the one thing the table may not hold.
std::vector<std::string> cited_sources(const JsonFields& row) {
  std::vector<std::string> sources = row.strings("sources");
  if (sources.empty()) row.fail("\"" + row.where("sources") + "\" is empty: every row cites its source");
  return sources;
}

GpuSpec read_gpu(const JsonFields& row) {
  GpuSpec gpu;
  gpu.name = row.string("name");
  gpu.architecture = row.string("architecture");
  for (const std::string& alias : row.strings("aliases")) gpu.aliases.push_back(lower(alias));
  gpu.memory_gb = row.positive("memory_gb");
  gpu.memory_bandwidth_gbps = row.positive("memory_bandwidth_gbps");
  gpu.fp32_tflops = row.optional_positive("fp32_tflops");
  gpu.tf32_tflops = row.optional_positive("tf32_tflops");
  gpu.fp16_tflops = row.optional_positive("fp16_tflops");
  gpu.bf16_tflops = row.optional_positive("bf16_tflops");
  if (!gpu.fp32_tflops) row.fail("\"" + row.where("fp32_tflops") + "\" is required (every GPU computes in fp32)");
  if (!row.require("nvlink").is_null()) {
    const JsonFields nvlink = row.object("nvlink");
    gpu.nvlink_fabric = nvlink.string("fabric");
    gpu.nvlink_max_gpus = static_cast<int>(nvlink.integer("max_gpus"));
    if (gpu.nvlink_max_gpus < 2) nvlink.fail("\"" + nvlink.where("max_gpus") + "\" must be at least 2");
  }
  gpu.pcie_gen = static_cast<int>(row.integer("pcie_gen"));
  if (gpu.pcie_gen < 3 || gpu.pcie_gen > 5) row.fail("\"" + row.where("pcie_gen") + "\" must be 3, 4 or 5");
  gpu.pcie_p2p = row.optional_boolean("pcie_p2p");
  gpu.derived = row.strings("derived");
  gpu.notes = row.string("notes");
  gpu.sources = cited_sources(row);
  return gpu;
}

FabricKind parse_kind(const JsonFields& row) {
  const std::string kind = row.string("kind");
  for (FabricKind k : {FabricKind::kNvlink, FabricKind::kPcieP2p, FabricKind::kHostStaged, FabricKind::kSockets,
                       FabricKind::kInfiniband, FabricKind::kEthernet}) {
    if (kind == fabric_kind_name(k)) return k;
  }
  row.fail("\"" + row.where("kind") + "\" is '" + kind +
           "' (nvlink, pcie_p2p, host_staged, sockets, infiniband, ethernet)");
}

FabricSpec read_fabric(const JsonFields& row) {
  FabricSpec fabric;
  fabric.name = row.string("name");
  fabric.kind = parse_kind(row);
  const std::string scope = row.string("scope");
  if (scope != "intra" && scope != "inter") row.fail("\"" + row.where("scope") + "\" must be intra or inter");
  fabric.inter_node = scope == "inter";
  fabric.gbps = row.optional_positive("gbps");
  fabric.hop = row.string("hop");
  if (fabric.hop != "nvlink" && fabric.hop != "pci" && fabric.hop != "net") {
    row.fail("\"" + row.where("hop") + "\" must be nvlink, pci or net");
  }
  fabric.max_gpus = row.has("max_gpus") ? static_cast<int>(row.integer("max_gpus")) : 0;
  fabric.sources = cited_sources(row);
  return fabric;
}

void check_schema_version(const JsonFields& top) {
  if (top.integer("schema_version") != 1) top.fail("schema_version must be 1");
}

}  // namespace

const char* fabric_kind_name(FabricKind kind) {
  switch (kind) {
    case FabricKind::kNvlink:
      return "nvlink";
    case FabricKind::kPcieP2p:
      return "pcie_p2p";
    case FabricKind::kHostStaged:
      return "host_staged";
    case FabricKind::kSockets:
      return "sockets";
    case FabricKind::kInfiniband:
      return "infiniband";
    case FabricKind::kEthernet:
      return "ethernet";
  }
  return "?";
}

HardwareDatabase parse_hardware_database(const std::string& gpus_json, const std::string& fabrics_json,
                                         const std::string& gpus_origin, const std::string& fabrics_origin) {
  HardwareDatabase db;
  const nlohmann::json fabrics_doc = detail::parse_json_document(fabrics_json, fabrics_origin);
  const JsonFields fabrics_top(fabrics_origin, fabrics_doc);
  check_schema_version(fabrics_top);
  std::set<std::string> fabric_names;
  for (const JsonFields& row : fabrics_top.array_of_objects("fabrics")) {
    db.fabrics.push_back(read_fabric(row));
    if (!fabric_names.insert(db.fabrics.back().name).second) row.fail("fabric '" + db.fabrics.back().name + "' twice");
  }
  const nlohmann::json gpus_doc = detail::parse_json_document(gpus_json, gpus_origin);
  const JsonFields gpus_top(gpus_origin, gpus_doc);
  check_schema_version(gpus_top);
  std::set<std::string> names;
  for (const JsonFields& row : gpus_top.array_of_objects("gpus")) {
    GpuSpec gpu = read_gpu(row);
    std::set<std::string> own(gpu.aliases.begin(), gpu.aliases.end());
    own.insert(lower(gpu.name));
    for (const std::string& name : own) {
      if (!names.insert(name).second) row.fail("GPU name or alias '" + name + "' is used by two GPUs");
    }
    if (!gpu.nvlink_fabric.empty()) {
      if (fabric_names.count(gpu.nvlink_fabric) == 0) {
        row.fail("\"" + row.where("nvlink.fabric") + "\" names no fabric of " + fabrics_origin);
      }
    }
    db.gpus.push_back(std::move(gpu));
  }
  return db;
}

const GpuSpec& HardwareDatabase::gpu(const std::string& name) const {
  const std::string wanted = lower(name);
  for (const GpuSpec& g : gpus) {
    if (lower(g.name) == wanted || std::count(g.aliases.begin(), g.aliases.end(), wanted) != 0) return g;
  }
  std::string known;
  for (const GpuSpec& g : gpus) known += (known.empty() ? "" : ", ") + g.name;
  throw UsageError("unknown GPU '" + name + "' (known: " + known + ")");
}

const FabricSpec& HardwareDatabase::fabric(const std::string& name) const {
  for (const FabricSpec& f : fabrics) {
    if (f.name == name) return f;
  }
  std::string known;
  for (const FabricSpec& f : fabrics) known += (known.empty() ? "" : ", ") + f.name;
  throw UsageError("unknown fabric '" + name + "' (known: " + known + ")");
}

const HardwareDatabase& builtin_hardware_database() {
  static const HardwareDatabase db = parse_hardware_database(builtin_gpus_json(), builtin_fabrics_json());
  return db;
}

}  // namespace sb
