// `scalebench plan`'s hardware tables: GPUs (src/plan/data/gpus.json) and fabrics (src/plan/data/fabrics.json), compiled
// into the binary so that plan runs anywhere. Every row cites its public source in the data file; a figure
// without a source is null there and an absent optional here. Parsing checks the schema field by field
// (UsageError "gpus.json: gpus[3].memory_gb: ...").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sb {

struct GpuSpec {
  std::string name, architecture;
  std::vector<std::string> aliases;  // lower-case alternative names accepted by --gpu
  double memory_gb = 0;              // vendor capacity, read as GiB (GPU memory sizes are binary in practice)
  double memory_bandwidth_gbps = 0;  // GB/s
  std::optional<double> fp32_tflops, tf32_tflops, fp16_tflops, bf16_tflops;  // dense; tensor peaks FP32-accumulate
  std::string nvlink_fabric;                                                 // "" without NVLink; else a fabric name
  int nvlink_max_gpus = 0;  // GPUs one NVLink domain joins (2 for bridges, 8 for NVSwitch boards)
  int pcie_gen = 0;
  std::optional<bool> pcie_p2p;      // none: no vendor statement found
  std::vector<std::string> derived;  // fields computed from vendor figures (see notes)
  std::string notes;
  std::vector<std::string> sources;
};

enum class FabricKind { kNvlink, kPcieP2p, kHostStaged, kSockets, kInfiniband, kEthernet };
const char* fabric_kind_name(FabricKind kind);  // "nvlink", "pcie_p2p", ... as in fabrics.json

struct FabricSpec {
  std::string name;
  FabricKind kind = FabricKind::kNvlink;
  bool inter_node = false;     // scope "inter": between nodes, gbps per network adapter
  std::optional<double> gbps;  // nominal per direction; none for measured-only paths (tcp-loopback)
  std::string hop;             // NCCL latency class: "nvlink" | "pci" | "net"
  int max_gpus = 0;            // 0: no limit
  std::vector<std::string> sources;
};

struct HardwareDatabase {
  std::vector<GpuSpec> gpus;
  std::vector<FabricSpec> fabrics;
  const GpuSpec& gpu(const std::string& name) const;        // by name or alias, any case; UsageError lists names
  const FabricSpec& fabric(const std::string& name) const;  // UsageError lists names
};

// Parses the two documents (their text) and checks every field; `gpus_origin` and `fabrics_origin` name them in
// errors. Every GPU's nvlink fabric must exist in the fabric table.
HardwareDatabase parse_hardware_database(const std::string& gpus_json, const std::string& fabrics_json,
                                         const std::string& gpus_origin = "gpus.json",
                                         const std::string& fabrics_origin = "fabrics.json");

// The tables compiled into the binary (src/plan/data/*.json at build time).
const HardwareDatabase& builtin_hardware_database();
const std::string& builtin_gpus_json();
const std::string& builtin_fabrics_json();
const std::string& builtin_calibration_json();

}  // namespace sb
