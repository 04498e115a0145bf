// Parsing and checking the GPU and fabric tables (include/scalebench/plan_database.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "scalebench/error.h"
#include "scalebench/plan_database.h"
#include "src/plan/json_fields.h"
#include "src/core/edit_distance.h"

namespace sb {
namespace {

using detail::JsonFields;

// A GPU name as people type it: case, spaces, hyphens and underscores do not matter ("RTX-4090" is "rtx 4090").
std::string squeezed(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c != ' ' && c != '-' && c != '_') out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// A name as CUDA reports it or a row's name or alias, as a key: lower case, the brand words dropped, words joined
// by dashes ("NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3"). scripts/gpu_peaks.py keys names the same way.
std::string device_key(const std::string& name) {
  std::istringstream words(name);
  std::string word, key;
  bool leading = true;
  while (words >> word) {
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
    if (leading && (word == "nvidia" || word == "geforce" || word == "tesla")) continue;
    leading = false;
    key += (key.empty() ? "" : "-") + word;
  }
  return key;
}

std::vector<std::string> own_names(const GpuSpec& gpu) {
  std::vector<std::string> names{squeezed(gpu.name)};
  for (const std::string& alias : gpu.aliases) names.push_back(squeezed(alias));
  return names;
}

std::string quoted_list(const std::vector<const GpuSpec*>& gpus) {
  std::string text;
  for (const GpuSpec* g : gpus) text += (text.empty() ? "'" : ", '") + g->name + "'";
  return text;
}

// A row must cite something: a database figure without a source is the one thing the table may not hold.
std::vector<std::string> cited_sources(const JsonFields& row) {
  std::vector<std::string> sources = row.strings("sources");
  if (sources.empty()) row.fail("\"" + row.where("sources") + "\" is empty: every row cites its source");
  return sources;
}

// The tensor-core fields must agree with the peaks: a precision the tensor cores multiply has its tensor peak, a
// tensor peak belongs to a listed precision, and generation 0 lists none.
void check_tensor_cores(const JsonFields& row, const GpuSpec& gpu) {
  const std::pair<const char*, std::optional<double>> peaks[] = {
      {"fp16", gpu.fp16_tflops}, {"bf16", gpu.bf16_tflops}, {"tf32", gpu.tf32_tflops}};
  for (const std::string& precision : gpu.tensor_precisions) {
    if (precision != "fp16" && precision != "bf16" && precision != "tf32") {
      row.fail("\"" + row.where("tensor_precisions") + "\" holds '" + precision + "' (fp16, bf16, tf32)");
    }
  }
  for (const auto& [precision, peak] : peaks) {
    const bool listed = gpu.tensor_cores_for(precision);
    // tf32 on GeForce Ampere/Ada is a tensor peak equal to FP32; a listed precision must have one either way.
    if (listed && !peak) row.fail(std::string(precision) + " is in tensor_precisions but " + precision + "_tflops is null");
    if (!listed && peak && std::string(precision) != "tf32") {
      row.fail(std::string(precision) + "_tflops is a tensor peak but " + precision + " is not in tensor_precisions");
    }
  }
  if ((gpu.tensor_core_generation == 0) != gpu.tensor_precisions.empty()) {
    row.fail("\"" + row.where("tensor_core_generation") + "\" is 0 exactly when tensor_precisions is empty");
  }
}

// A sustained clock scales every compute peak, so it must be a measurement and a plausible one: a
// clock_power_sources entry says where it was measured (it names "sustained"), and the value lies between half the
// base clock (half the boost clock where no base clock is published) and 1.5 x the boost clock. GPU Boost runs
// above the boost clock when there is headroom, never above 1.5 x it; a card that holds less than half its base
// clock is broken or idle, not a sustained load.
void check_sustained_clock(const JsonFields& row, const GpuSpec& gpu) {
  const double sustained = *gpu.sustained_clock_mhz;
  const double low = 0.5 * (gpu.base_clock_mhz ? *gpu.base_clock_mhz : *gpu.boost_clock_mhz);
  const double high = 1.5 * *gpu.boost_clock_mhz;
  if (sustained < low || sustained > high) {
    row.fail("\"" + row.where("sustained_clock_mhz") + "\" is " + std::to_string(static_cast<int>(sustained)) +
             " MHz, outside " + std::to_string(static_cast<int>(low)) + "-" + std::to_string(static_cast<int>(high)) +
             " MHz (0.5 x base to 1.5 x boost clock)");
  }
  const bool cited = std::any_of(gpu.clock_power_sources.begin(), gpu.clock_power_sources.end(),
                                 [](const std::string& s) { return s.find("sustained") != std::string::npos; });
  if (!cited) {
    row.fail("\"" + row.where("sustained_clock_mhz") + "\" has no source: no clock_power_sources entry names the "
             "sustained-clock measurement (the word 'sustained')");
  }
}

GpuSpec read_gpu(const JsonFields& row) {
  GpuSpec gpu;
  gpu.name = row.string("name");
  gpu.architecture = row.string("architecture");
  gpu.aliases = row.strings("aliases");
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
  gpu.boost_clock_mhz = row.optional_positive("boost_clock_mhz");
  gpu.base_clock_mhz = row.optional_positive("base_clock_mhz");
  gpu.sustained_clock_mhz = row.optional_positive("sustained_clock_mhz");
  gpu.board_power_w = row.optional_positive("board_power_w");
  gpu.memory_gbps_per_pin = row.optional_positive("memory_gbps_per_pin");
  gpu.tensor_core_generation = static_cast<int>(row.integer("tensor_core_generation"));
  gpu.tensor_precisions = row.strings("tensor_precisions");
  check_tensor_cores(row, gpu);
  if (gpu.sustained_clock_mhz && !gpu.boost_clock_mhz) {
    row.fail("\"" + row.where("sustained_clock_mhz") + "\" needs boost_clock_mhz (peaks are quoted at boost)");
  }
  gpu.clock_power_sources = row.strings("clock_power_sources");
  if (gpu.clock_power_sources.empty()) row.fail("\"" + row.where("clock_power_sources") + "\" is empty");
  if (gpu.sustained_clock_mhz) check_sustained_clock(row, gpu);
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

namespace {

bool same_datasheet_row(const GpuSpec& a, const GpuSpec& b) {
  return a.architecture == b.architecture && a.boost_clock_mhz == b.boost_clock_mhz && a.fp32_tflops == b.fp32_tflops &&
         a.tf32_tflops == b.tf32_tflops && a.fp16_tflops == b.fp16_tflops && a.bf16_tflops == b.bf16_tflops &&
         a.memory_bandwidth_gbps == b.memory_bandwidth_gbps;
}

// GpuSpec::power_twin_scale. Measured check (docs/PLAN.md): Titan RTX (280 W) against Quadro RTX 6000 (260 W),
// predicted 1.025x, Lambda's fp32 PyTorch training throughput 1.008-1.044x in 8 of 10 models.
void scale_power_twins(std::vector<GpuSpec>& gpus) {
  for (GpuSpec& gpu : gpus) {
    if (!gpu.board_power_w || !gpu.boost_clock_mhz) continue;
    double highest = *gpu.board_power_w;
    for (const GpuSpec& other : gpus) {
      if (&other != &gpu && other.board_power_w && same_datasheet_row(gpu, other)) {
        highest = std::max(highest, *other.board_power_w);
      }
    }
    gpu.power_twin_scale = std::cbrt(*gpu.board_power_w / highest);
  }
}

}  // namespace

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
    const std::vector<std::string> names_of_row = own_names(gpu);
    const std::set<std::string> own(names_of_row.begin(), names_of_row.end());
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
  scale_power_twins(db.gpus);
  return db;
}

// A name or alias (squeezed) picks its board. Nothing is guessed: a name that is part of several boards' names
// ("A100": 40 and 80 GB) is ambiguous and lists them; part of one board's name ("RTX 8000") or a typo of one
// ("RTX 4900") is refused with a "did you mean".
bool GpuSpec::tensor_cores_for(const std::string& precision) const {
  return std::count(tensor_precisions.begin(), tensor_precisions.end(), precision) != 0;
}

double GpuSpec::clock_scale() const {
  return sustained_clock_mhz && boost_clock_mhz ? *sustained_clock_mhz / *boost_clock_mhz : power_twin_scale;
}

// The longest name or alias equal to the device's key or a dash-separated prefix of it ("h100-pcie" is the PCIe row,
// not "h100"'s).
const GpuSpec* HardwareDatabase::gpu_for_device_name(const std::string& device_name) const {
  const std::string key = device_key(device_name);
  const GpuSpec* best = nullptr;
  size_t best_length = 0;
  for (const GpuSpec& gpu : gpus) {
    std::vector<std::string> names = gpu.aliases;
    names.push_back(gpu.name);
    for (const std::string& name : names) {
      const std::string alias = device_key(name);
      const bool matches = key == alias || key.rfind(alias + "-", 0) == 0;
      if (matches && alias.size() > best_length) best = &gpu, best_length = alias.size();
    }
  }
  return best;
}

const GpuSpec& HardwareDatabase::gpu(const std::string& name) const {
  const std::string wanted = squeezed(name);
  std::vector<const GpuSpec*> containing, close;
  for (const GpuSpec& g : gpus) {
    const std::vector<std::string> names = own_names(g);
    if (std::count(names.begin(), names.end(), wanted) != 0) return g;
    if (wanted.empty()) continue;
    if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.find(wanted) != n.npos; })) {
      containing.push_back(&g);
    } else if (edit_distance(wanted, names.front()) <= 2) {
      close.push_back(&g);
    }
  }
  if (containing.size() > 1) {
    throw UsageError("GPU '" + name + "' is ambiguous: it names " + quoted_list(containing) + "; give one of them");
  }
  if (!containing.empty() || !close.empty()) {
    throw UsageError("unknown GPU '" + name + "'; did you mean " + quoted_list(containing.empty() ? close : containing) +
                     "?");
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
