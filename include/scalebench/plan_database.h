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
  std::vector<std::string> aliases;  // other names --gpu accepts (case, spaces and hyphens ignored)
  double memory_gb = 0;              // vendor capacity, read as GiB (GPU memory sizes are binary in practice)
  double memory_bandwidth_gbps = 0;  // GB/s
  std::optional<double> fp32_tflops, tf32_tflops, fp16_tflops, bf16_tflops;  // dense; tensor peaks FP32-accumulate
  std::string nvlink_fabric;                                                 // "" without NVLink; else a fabric name
  int nvlink_max_gpus = 0;  // GPUs one NVLink domain joins (2 for bridges, 8 for NVSwitch boards)
  int pcie_gen = 0;
  std::optional<bool> pcie_p2p;      // none: no vendor statement found
  // What decides sustained speed (gpus.json "about"): clocks in MHz, board power in W, memory data rate in Gbps per
  // pin; none where no source was found. The roofline scales compute peaks by sustained / boost clock.
  std::optional<double> boost_clock_mhz, base_clock_mhz, sustained_clock_mhz, board_power_w, memory_gbps_per_pin;
  int tensor_core_generation = 0;             // 0: no tensor cores
  std::vector<std::string> tensor_precisions;  // "fp16", "bf16", "tf32": what the tensor cores multiply
  std::vector<std::string> clock_power_sources;
  bool tensor_cores_for(const std::string& precision) const;
  // Boards whose datasheet rows are identical (same architecture, boost clock, peaks and memory bandwidth: one chip
  // in different boards) but whose board power differs sustain different clocks under a power-limited load. Without
  // a sourced sustained clock, each such board's clock is taken as (power / the group's highest power)^(1/3) of the
  // boost clock (dynamic power ~ f·V² with V ~ f); 1 for a board without a twin (set by parse_hardware_database).
  double power_twin_scale = 1.0;
  double clock_scale() const;  // sustained / boost clock where sourced; else power_twin_scale
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
  // By name or alias, ignoring case, spaces and hyphens; UsageError: ambiguous (lists the boards), did you mean, or
  // the known names.
  const GpuSpec& gpu(const std::string& name) const;
  // The row of a device by the name CUDA reports ("NVIDIA H100 80GB HBM3": the H100 SXM row), matched on words
  // (brand words dropped, a row's name or alias equal to the name or a prefix of it, the longest winning); null when
  // none is. `run`'s MFU peak (peak_tflops) finds its GPU here.
  const GpuSpec* gpu_for_device_name(const std::string& device_name) const;
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
